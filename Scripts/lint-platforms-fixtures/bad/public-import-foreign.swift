// expect: public-import-foreign
public import Dispatch

public func later(_ work: @escaping @Sendable () -> Void) { DispatchQueue.global().async(execute: work) }
