import ResourceKitHTTP

/// Names of types, worked out once per type: printing a type's name demangles it.
enum TypeNames {
    /// How a name is shown.
    enum Form: UInt8 {
        case bare, resource, list
    }

    private struct Key: Hashable {
        var type: ObjectIdentifier
        var form: Form
    }

    private static let names = Locked<[Key: String]>([:])

    /// The type's name, as in `Post`, `Resource<RemotePost>` or `ListResource<RemoteFeed>`.
    static func name(of type: Any.Type, as form: Form = .bare) -> String {
        let key = Key(type: ObjectIdentifier(type), form: form)
        if let name = names.withLock({ $0[key] }) { return name }
        let bare = String(describing: type)
        let name =
            switch form {
            case .bare: bare
            case .resource: "Resource<" + bare + ">"
            case .list: "ListResource<" + bare + ">"
            }
        names.withLock { $0[key] = name }
        return name
    }
}
