// The event feed and the activity indicator live in the HTTP layer, beside the requests they describe; a file
// that imports this module alone, as it did when they lived here, still finds `DiagnosticEvents` and
// `NetworkActivity`.
@_exported public import ResourceKitHTTP
