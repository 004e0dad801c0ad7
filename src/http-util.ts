/** Small HTTP rules shared by the model providers and the channels: one home each. */

/** 408, 429 and 5xx may succeed later; any other 4xx means the request itself is wrong and will stay wrong. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** `base` + `/` + `path`, with exactly one slash between them whatever the config wrote. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}
