// The HTTP layer is part of ResourceKit's API: `import ResourceKit` alone gives the session, endpoints and
// transports that resources are built on.
@_exported public import ResourceKitHTTP
