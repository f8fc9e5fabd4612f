public import ResourceKitHTTP

extension Endpoint {
    /// Where the upload of this request's body reports how far it has come: the bytes handed to the
    /// transport, restarted at zero by each attempt and redirect that sends the body again, and finished when
    /// the call ends. With a progress, the body is streamed, whatever its kind, so that it can be counted: a
    /// body in memory (`RequestBody.data(_:contentType:)`, JSON) is then sent from a stream too, which on
    /// Linux means `Transfer-Encoding: chunked` with no `Content-Length` (a server that insists on a length
    /// refuses it, some with `411` or `501`). A body streamed anyway (`RequestBody.file(_:contentType:)`, a
    /// ``MultipartForm`` with files) is counted with or without one. Use one progress per call.

    public var uploadProgress: TransferProgress? {
        get { progress as? TransferProgress }
        set { progress = newValue }
    }
}
