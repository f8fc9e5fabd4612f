#if canImport(FoundationNetworking)
    public import Foundation
    import FoundationNetworking
#else
    public import Foundation
#endif

/// What ``NetworkSession`` does with a redirect (`301`, `302`, `303`, `307`, `308` with a `Location`).
///
/// The session follows redirects itself; the transport returns them. On every hop:
/// - `307` and `308` repeat the request as it was, body included; `303` becomes a `GET` (a `HEAD` stays a
///   `HEAD`) without a body, and so does a `POST` answered with `301` or `302`, as browsers do;
/// - a hop gets exactly the credentials a direct request to its URL would get: the session's adapters, its
///   authenticator and the `Authorization`, `Proxy-Authorization` and `Cookie` among its default headers
///   when the hop's origin (scheme, host and port) is in its ``CredentialScope``, none of them elsewhere;
///   the endpoint's own `Authorization`, `Proxy-Authorization` and `Cookie` only on the endpoint's origin.
///   So credentials are dropped on a hop out of scope and come back on a hop back into it (api → login →
///   api), and a CDN trusted with ``CredentialScope/baseURL(and:)`` or ``CredentialScope/anyOrigin`` gets
///   the session's credentials after a redirect as it does when asked directly, but not the endpoint's own;
/// - more hops than the policy allows end the request with
///   ``NetworkError/transport(code:message:)`` and `URLError.httpTooManyRedirects`.
public struct RedirectPolicy: Sendable, Equatable {
    /// The most redirects followed for one request; `0` returns every redirect to the caller.
    public var maximumHops: Int

    /// Follows at most `maximumHops` redirects.
    /// - Parameter maximumHops: The most redirects followed for one request.
    /// - Returns: The policy.
    public static func follow(maximumHops: Int) -> RedirectPolicy { RedirectPolicy(maximumHops: max(maximumHops, 0)) }

    /// Follows up to 10 redirects: the default.
    public static let follow = RedirectPolicy(maximumHops: 10)

    /// Follows no redirect: the `3xx` response goes to the validation provider (which by default turns it
    /// into ``NetworkError/httpStatus(code:body:headers:)``, whose headers hold `Location`), or to the caller
    /// of ``NetworkSession/response(for:)`` when the validation accepts it.
    ///
    /// ```swift
    /// var endpoint = Endpoint(.get, "download")
    /// endpoint.redirects = .never   // this endpoint only; the session's policy applies elsewhere
    /// ```
    public static let never = RedirectPolicy(maximumHops: 0)
}

/// The origins that the session's adapters and authenticator may send credentials to, and that get the
/// `Authorization`, `Proxy-Authorization` and `Cookie` among its default headers.
///
/// An origin is a scheme, host and port: `https://api.example.com` and `https://api.example.com:443` are
/// the same origin, `http://api.example.com` and `https://cdn.example.com` are others. By default only the
/// base URL's origin gets credentials, so an absolute `Link` to another host, an absolute endpoint URL or a
/// redirect elsewhere is sent without them. The scope decides for every redirect hop as for a direct
/// request, so a hop back to an origin in scope has its credentials again.
public struct CredentialScope: Sendable, Equatable {
    let includesBaseURL: Bool
    let others: Set<Origin>
    let isUnlimited: Bool

    /// Only the base URL's origin: the default.
    public static let baseURL = CredentialScope(includesBaseURL: true, others: [], isUnlimited: false)

    /// The base URL's origin and the origins of these URLs.
    /// - Parameter urls: URLs whose origins are trusted too; URLs without a host are ignored.
    /// - Returns: The scope.
    public static func baseURL(and urls: [URL]) -> CredentialScope {
        CredentialScope(includesBaseURL: true, others: Set(urls.compactMap(Origin.init)), isUnlimited: false)
    }

    /// Every origin. Credentials follow absolute links and redirects anywhere: use it only when every host
    /// the session can reach is yours.
    public static let anyOrigin = CredentialScope(includesBaseURL: true, others: [], isUnlimited: true)

    func contains(_ url: URL?, base: URL?) -> Bool {
        if isUnlimited { return true }
        guard let origin = url.flatMap(Origin.init) else { return false }
        if includesBaseURL, let base = base.flatMap(Origin.init), base == origin { return true }
        return others.contains(origin)
    }
}

/// Scheme, host and port of a URL, compared case-insensitively with default ports filled in.
struct Origin: Hashable, Sendable {
    var scheme: String
    var host: String
    var port: Int

    init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else {
            return nil
        }
        self.scheme = scheme
        self.host = host
        self.port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
    }
}

enum Redirect {
    static let statuses: Set<Int> = [301, 302, 303, 307, 308]
    static let credentialHeaders = ["Authorization", "Proxy-Authorization", "Cookie"]

    /// The request for the next hop, or `nil` when `response` is not a redirect to follow. A `Location` that
    /// cannot be followed is named in the error as `redaction` shows it: the error reaches the logs.
    static func next(
        after request: URLRequest, response: HTTPResponse, redaction: LogRedaction
    ) throws(NetworkError) -> URLRequest? {
        guard statuses.contains(response.statusCode), let location = response.headers["Location"],
            let current = request.url
        else { return nil }
        guard let target = URL(string: location, relativeTo: current)?.absoluteURL,
            let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https", target.host != nil
        else {
            let shown = redaction.redact(reference: location)
            throw .invalidResponse("the redirect's Location '\(shown)' is not an http or https URL")
        }
        var next = request
        next.url = target
        let method = request.httpMethod ?? "GET"
        let becomesGET =
            (response.statusCode == 303 && method != "HEAD")
            || ((response.statusCode == 301 || response.statusCode == 302) && method == "POST")
        if becomesGET {
            next.httpMethod = "GET"
            next.httpBody = nil
            next.httpBodyStream = nil
            next.setValue(nil, forHTTPHeaderField: "Content-Type")
            next.setValue(nil, forHTTPHeaderField: "Content-Length")
        }
        // The session gives the hop the credentials a direct request to `target` gets, whatever the last one had.
        for name in credentialHeaders { next.setValue(nil, forHTTPHeaderField: name) }
        return next
    }

    /// The credential headers among `headers`.
    static func credentials(in headers: HTTPHeaders) -> HTTPHeaders {
        var credentials = HTTPHeaders()
        for name in credentialHeaders { credentials[name] = headers[name] }
        return credentials
    }
}
