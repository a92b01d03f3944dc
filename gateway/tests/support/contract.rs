//! The contract the OpenAPI document and the router must both cover.

/// Every route of API.md (method, path), copied from its tables and its Operations line.
pub const API_MD: &[(&str, &str)] = &[
    // Buyer API
    ("post", "/api/events/{event}/queue"),
    ("get", "/api/events/{event}/queue/snapshot"),
    ("get", "/api/events/{event}/queue/status"),
    ("post", "/api/events/{event}/queue/claim"),
    ("get", "/api/events/{event}/queue/ws"),
    ("get", "/api/events/{event}"),
    ("get", "/api/events/{event}/seats"),
    ("get", "/api/events/{event}/fairness"),
    ("get", "/api/session"),
    ("post", "/api/events/{event}/holds"),
    ("post", "/api/holds/{hold}/extend"),
    ("post", "/api/holds/{hold}/checkout"),
    ("delete", "/api/holds/{hold}"),
    ("get", "/api/holds/{hold}"),
    ("get", "/api/orders/{order}"),
    // Payment provider protocol: the webhook the gateway receives
    ("post", "/api/payments/webhook"),
    // Organizer API
    ("post", "/api/admin/events"),
    ("post", "/api/admin/events/{event}/seats"),
    ("patch", "/api/admin/events/{event}/admission"),
    ("get", "/api/admin/events/{event}/stats"),
    ("get", "/api/admin/events/{event}/timeline"),
    ("get", "/api/admin/events/{event}/stuck"),
    ("post", "/api/admin/events/{event}/close"),
    // Added for the organizer's night: codes, and the access rule and identity key they serve
    ("post", "/api/admin/events/{event}/codes"),
    ("get", "/api/admin/events/{event}/codes"),
    ("get", "/api/admin/events/{event}/access"),
    ("patch", "/api/admin/events/{event}/access"),
    // Added for the organizer's night: webhooks to the organizer's systems
    ("post", "/api/admin/events/{event}/webhooks"),
    ("get", "/api/admin/events/{event}/webhooks"),
    ("delete", "/api/admin/events/{event}/webhooks/{webhook}"),
    (
        "get",
        "/api/admin/events/{event}/webhooks/{webhook}/deliveries",
    ),
    ("post", "/api/admin/events/{event}/webhooks/{webhook}/test"),
    // The look of an event's pages (branding, embedding sites)
    ("get", "/api/admin/events/{event}"),
    ("patch", "/api/admin/events/{event}"),
    // Added for the organizer's night: the event list, team keys, exports
    ("get", "/api/admin/events"),
    ("post", "/api/admin/keys"),
    ("get", "/api/admin/keys"),
    ("delete", "/api/admin/keys/{key}"),
    ("get", "/api/admin/events/{event}/exports/orders.csv"),
    ("get", "/api/admin/events/{event}/exports/sales.csv"),
    ("get", "/api/admin/events/{event}/exports/holds.csv"),
    ("get", "/api/admin/events/{event}/exports/admissions.csv"),
    ("get", "/api/admin/events/{event}/exports/audit.csv"),
    // Operations
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("get", "/"),
    ("get", "/admin"),
    // The document itself (API.md's introduction)
    ("get", "/api/openapi.json"),
];
