import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * One endpoint of the admin listener (docs/reference.md#the-admin-listener). Each feature (the API, the live feed,
 * metrics, health, the dashboard's static files) exports its routes as a list of these; admin/server.ts matches method
 * and path, checks the admin token unless `auth` is false, and calls `handle`.
 */
export interface AdminRoute {
  method: 'GET' | 'POST';
  /** `/api/v1/runs/:id`: `:name` segments become `params.name` (URL-decoded). */
  path: string;
  /** Default true: `Authorization: Bearer <admin token>` is required (401 `unauthorized` otherwise). */
  auth?: boolean;
  handle(call: AdminCall): void | Promise<void>;
}

/** What a route handler gets: the raw request and response, the path's parameters and the query string. */
export interface AdminCall {
  req: IncomingMessage;
  res: ServerResponse;
  params: Record<string, string>;
  query: URLSearchParams;
}
