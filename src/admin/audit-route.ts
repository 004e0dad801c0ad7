/** `GET /api/v1/audit` (docs/admin.md): the audit trail, newest first, cursor-paged like the other lists. */
import { sendJson } from '../ingress/respond.js';
import type { AuditStore } from '../store/audit-types.js';
import { parseAuditQuery } from './query.js';
import type { AdminRoute } from './route.js';

export function auditRoutes(store: Pick<AuditStore, 'pageAudit'>): AdminRoute[] {
  return [
    {
      method: 'GET',
      path: '/api/v1/audit',
      async handle({ res, query }) {
        const page = await store.pageAudit(parseAuditQuery(query));
        sendJson(res, 200, { items: page.items, nextCursor: page.nextCursor });
      },
    },
  ];
}
