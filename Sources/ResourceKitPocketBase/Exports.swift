// The realtime source takes a `ReconnectPolicy` and tells `EventStreamStatus`es: the event-stream layer is part
// of this module's API, so `import ResourceKitPocketBase` brings it, as `import ResourceKit` brings the HTTP
// layer.
@_exported public import ResourceKitEventStream
