/** The hook token of the tests' configs: valid, and long enough (≥ 16 characters) to draw no "short token" warning. */
export const TOKEN = 'test-hook-token-0123456789abcdef';
