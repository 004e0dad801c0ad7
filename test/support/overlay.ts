/** `target` with some members replaced (`over`); its other methods bound to it, so they see its own state. */
export function overlay<T extends object>(target: T, over: Partial<T>): T {
  return new Proxy(target, {
    get(t, prop) {
      if (Object.hasOwn(over, prop)) return (over as Record<PropertyKey, unknown>)[prop];
      const v = Reflect.get(t, prop, t) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
}
