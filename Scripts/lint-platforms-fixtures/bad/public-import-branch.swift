// expect: public-import-branch
// The shape ResourceKitInspection's Snapshot.swift once had: nothing public needs Foundation on Linux, so on
// Darwin the public import is unused ("public import of 'Foundation' was not used in public declarations"), an error with -warnings-as-errors.
public import ResourceKit

#if canImport(FoundationNetworking)
    import Foundation
#else
    public import Foundation
#endif

public struct Picture: Sendable { public var count: Int }
