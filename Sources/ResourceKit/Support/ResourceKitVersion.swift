/// The library's version, as sent in the default `User-Agent` header.
public enum ResourceKitVersion {
    /// The version, such as `0.2.0`.
    public static let version = "0.2.0"
    /// `ResourceKit/<version>`: the `User-Agent` of requests that set none themselves.
    public static let userAgent = "ResourceKit/\(version)"
}
