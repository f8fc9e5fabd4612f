/// The key paths a host names to Observation, one set per concrete host type.
///
/// Forming `\.state` on a generic class instantiates the key path at run time, demangling its generic
/// arguments: about 2 µs, most of what making a resource cost. Each type's key paths are formed once and
/// shared by all its objects. (`@usableFromInline`: the inlinable `Resource.init` calls it, which makes it
/// part of the module's API surface.)
@usableFromInline let observedKeyPaths = Locked<[ObjectIdentifier: any Sendable]>([:])

/// The key paths `make` forms for `root`, formed once per type; `Paths` is a final class that holds them.
@inlinable func observedKeyPaths<Root: AnyObject, Paths: AnyObject & Sendable>(
    of root: Root.Type, _ make: () -> Paths
) -> Paths {
    let id = ObjectIdentifier(root)
    if let cached = observedKeyPaths.withLock({ $0[id] }) as? Paths { return cached }
    let made = make()
    observedKeyPaths.withLock { $0[id] = made }
    return made
}
