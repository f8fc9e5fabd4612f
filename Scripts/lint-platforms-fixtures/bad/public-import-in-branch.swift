// expect: public-import-branch
// platforms: the Linux side needs the C library for `off_t` (this exemption covers the #if; the public
// import inside it is still a finding).
#if os(Linux)
    public import Foundation
#endif

public func size() -> Int { 0 }
