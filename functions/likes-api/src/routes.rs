//! Request → route mapping. Pure: no I/O, tested on its own.
//!
//! The API is one Lambda behind a catch-all API Gateway route, so unknown paths and wrong methods
//! reach this code and get the same JSON error contract as everything else.

use http::Method;
use likes_core::PostId;
use percent_encoding::percent_decode_str;

use crate::error::ApiError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Like(PostId),
    Unlike(PostId),
    GetLike(PostId),
    Count(PostId),
    Likers(PostId),
    MyLikes,
    /// `DELETE /users/me/likes`: erase all of the caller's likes, asynchronously.
    EraseMine,
    Summary,
    /// `PUT`/`DELETE /posts/{post}/reactions/{kind}`: the kind as written (checked against the
    /// deployment's kinds by the handler).
    React(PostId, String),
    Unreact(PostId, String),
    /// `GET /posts/{post}/reactions`.
    Reactions(PostId),
    /// `GET /posts/{post}/reactions/{kind}/users`.
    Reactors(PostId, String),
    /// `OPTIONS` on a known path, which needs no token: with CORS on, the template routes it
    /// past the authorizer (a browser's preflight carries none), and API Gateway adds the CORS
    /// headers. Answered 204 with `Allow`.
    Options(&'static str),
}

/// The shape of a path, before its ids are validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape<'a> {
    PostLike(&'a str),
    PostCount(&'a str),
    PostLikers(&'a str),
    MyLikes,
    Summary,
    PostReaction(&'a str, &'a str),
    PostReactions(&'a str),
    PostReactors(&'a str, &'a str),
}

fn shape(path: &str) -> Option<Shape<'_>> {
    let rest = path.strip_prefix('/')?;
    let segments: Vec<&str> = rest.split('/').collect();
    match segments.as_slice() {
        ["posts", id, "like"] => Some(Shape::PostLike(id)),
        ["posts", id, "likes", "count"] => Some(Shape::PostCount(id)),
        ["posts", id, "likes"] => Some(Shape::PostLikers(id)),
        ["users", "me", "likes"] => Some(Shape::MyLikes),
        ["likes", "summary"] => Some(Shape::Summary),
        ["posts", id, "reactions"] => Some(Shape::PostReactions(id)),
        ["posts", id, "reactions", kind] => Some(Shape::PostReaction(id, kind)),
        ["posts", id, "reactions", kind, "users"] => Some(Shape::PostReactors(id, kind)),
        _ => None,
    }
}

/// The post id in a path segment, percent-decoded exactly once. A `%` left after decoding (an
/// id encoded twice, or a stray `%`) is outside the id grammar, so it is rejected, not decoded
/// again.
fn post_id(segment: &str) -> Result<PostId, ApiError> {
    let decoded = percent_decode_str(segment).decode_utf8_lossy();
    Ok(PostId::parse(&decoded)?)
}

/// A kind in a path segment, percent-decoded exactly once (a `+` may come as `%2B`); the
/// handler checks it against the deployment's kinds.
fn kind(segment: &str) -> String {
    percent_decode_str(segment).decode_utf8_lossy().into_owned()
}

const POST_LIKE_ALLOW: &str = "GET, PUT, DELETE";
const GET_ONLY: &str = "GET";
const MY_LIKES_ALLOW: &str = "GET, DELETE";
const REACTION_ALLOW: &str = "PUT, DELETE";

/// The methods a path answers, as `Allow` names them.
fn allowed(shape: Shape<'_>) -> &'static str {
    match shape {
        Shape::PostLike(_) => POST_LIKE_ALLOW,
        Shape::MyLikes => MY_LIKES_ALLOW,
        Shape::PostReaction(..) => REACTION_ALLOW,
        Shape::PostCount(_)
        | Shape::PostLikers(_)
        | Shape::Summary
        | Shape::PostReactions(_)
        | Shape::PostReactors(..) => GET_ONLY,
    }
}

fn get_only(
    method: &Method,
    route: impl FnOnce() -> Result<Route, ApiError>,
) -> Result<Route, ApiError> {
    if *method == Method::GET {
        route()
    } else {
        Err(ApiError::method_not_allowed(method.as_str(), GET_ONLY))
    }
}

/// Maps method and raw path to a route. Errors: 404 (no such path), 405 (path exists, method
/// does not; carries `Allow`), 400 (an id in the path is not an id).
///
/// Callers that must rank errors (a 401 beats a 400 for a bad id) use [`ApiError::status`].
pub fn route(method: &Method, path: &str) -> Result<Route, ApiError> {
    let shape = shape(path).ok_or_else(|| ApiError::not_found(path))?;
    // Before the ids are read: a preflight's answer does not depend on them, and the request
    // that follows it gets the 400.
    if *method == Method::OPTIONS {
        return Ok(Route::Options(allowed(shape)));
    }
    match shape {
        Shape::PostLike(id) => {
            let make = match *method {
                Method::PUT => Route::Like,
                Method::DELETE => Route::Unlike,
                Method::GET => Route::GetLike,
                _ => {
                    return Err(ApiError::method_not_allowed(
                        method.as_str(),
                        allowed(shape),
                    ))
                }
            };
            Ok(make(post_id(id)?))
        }
        Shape::PostCount(id) => get_only(method, || Ok(Route::Count(post_id(id)?))),
        Shape::PostLikers(id) => get_only(method, || Ok(Route::Likers(post_id(id)?))),
        Shape::MyLikes => match *method {
            Method::GET => Ok(Route::MyLikes),
            Method::DELETE => Ok(Route::EraseMine),
            _ => Err(ApiError::method_not_allowed(
                method.as_str(),
                MY_LIKES_ALLOW,
            )),
        },
        Shape::Summary => get_only(method, || Ok(Route::Summary)),
        Shape::PostReaction(id, kind) => {
            let make = match *method {
                Method::PUT => Route::React,
                Method::DELETE => Route::Unreact,
                _ => {
                    return Err(ApiError::method_not_allowed(
                        method.as_str(),
                        REACTION_ALLOW,
                    ))
                }
            };
            Ok(make(post_id(id)?, self::kind(kind)))
        }
        Shape::PostReactions(id) => get_only(method, || Ok(Route::Reactions(post_id(id)?))),
        Shape::PostReactors(id, kind) => get_only(method, || {
            Ok(Route::Reactors(post_id(id)?, self::kind(kind)))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

    #[test]
    fn maps_the_write_routes() {
        let post = PostId::parse(P).unwrap();
        let path = format!("/posts/{P}/like");
        assert_eq!(route(&Method::PUT, &path), Ok(Route::Like(post.clone())));
        assert_eq!(
            route(&Method::DELETE, &path),
            Ok(Route::Unlike(post.clone()))
        );
        assert_eq!(route(&Method::GET, &path), Ok(Route::GetLike(post)));
    }

    #[test]
    fn maps_the_read_routes() {
        let post = PostId::parse(P).unwrap();
        let get = |p: &str| route(&Method::GET, p);
        assert_eq!(
            get(&format!("/posts/{P}/likes/count")),
            Ok(Route::Count(post.clone()))
        );
        assert_eq!(get(&format!("/posts/{P}/likes")), Ok(Route::Likers(post)));
        assert_eq!(get("/users/me/likes"), Ok(Route::MyLikes));
        assert_eq!(get("/likes/summary"), Ok(Route::Summary));
        for p in [
            format!("/posts/{P}/likes/count"),
            format!("/posts/{P}/likes"),
            "/likes/summary".to_owned(),
        ] {
            let err = route(&Method::PUT, &p).unwrap_err();
            assert_eq!((err.status, err.allow), (405, Some("GET")), "{p}");
        }
        assert_eq!(
            route(&Method::DELETE, "/users/me/likes"),
            Ok(Route::EraseMine)
        );
        let err = route(&Method::PUT, "/users/me/likes").unwrap_err();
        assert_eq!((err.status, err.allow), (405, Some("GET, DELETE")));
        // Only "me": another user's likes are not addressable.
        assert_eq!(get(&format!("/users/{P}/likes")).unwrap_err().status, 404);
    }

    #[test]
    fn maps_the_reaction_routes() {
        let post = PostId::parse(P).unwrap();
        let path = format!("/posts/{P}/reactions/love");
        let love = "love".to_owned();
        assert_eq!(
            route(&Method::PUT, &path),
            Ok(Route::React(post.clone(), love.clone()))
        );
        assert_eq!(
            route(&Method::DELETE, &path),
            Ok(Route::Unreact(post.clone(), love.clone()))
        );
        let err = route(&Method::GET, &path).unwrap_err();
        assert_eq!((err.status, err.allow), (405, Some("PUT, DELETE")));
        assert_eq!(
            route(&Method::GET, &format!("/posts/{P}/reactions")),
            Ok(Route::Reactions(post.clone()))
        );
        assert_eq!(
            route(&Method::GET, &format!("/posts/{P}/reactions/love/users")),
            Ok(Route::Reactors(post, love))
        );
        assert_eq!(
            route(&Method::OPTIONS, &path),
            Ok(Route::Options("PUT, DELETE"))
        );
        let plus_one = route(&Method::PUT, &format!("/posts/{P}/reactions/%2B1"));
        assert_eq!(
            plus_one,
            Ok(Route::React(PostId::parse(P).unwrap(), "+1".to_owned()))
        );
        let err = route(&Method::PUT, &format!("/posts/{P}/reactions")).unwrap_err();
        assert_eq!((err.status, err.allow), (405, Some("GET")));
    }

    #[test]
    fn wrong_method_is_405_with_allow() {
        for m in [Method::POST, Method::PATCH, Method::HEAD, Method::TRACE] {
            let err = route(&m, &format!("/posts/{P}/like")).unwrap_err();
            assert_eq!(err.status, 405, "{m}");
            assert_eq!(err.allow, Some("GET, PUT, DELETE"));
        }
    }

    #[test]
    fn options_on_a_known_path_names_its_methods_whatever_its_ids() {
        let options = |p: &str| route(&Method::OPTIONS, p);
        for (path, allow) in [
            (format!("/posts/{P}/like"), "GET, PUT, DELETE"),
            ("/posts/not%20an%20id/like".to_owned(), "GET, PUT, DELETE"),
            (format!("/posts/{P}/likes/count"), "GET"),
            (format!("/posts/{P}/likes"), "GET"),
            ("/likes/summary".to_owned(), "GET"),
            ("/users/me/likes".to_owned(), "GET, DELETE"),
        ] {
            assert_eq!(options(&path), Ok(Route::Options(allow)), "{path}");
        }
        assert_eq!(options("/nowhere").unwrap_err().status, 404);
    }

    #[test]
    fn unknown_paths_are_404() {
        for p in [
            "/",
            "",
            "/posts",
            &format!("/posts/{P}"),
            &format!("/posts/{P}/like/"),
            &format!("/posts/{P}/likes/extra"),
            "/users/me",
            "/likes",
            &format!("//posts/{P}/like"),
            &format!("/POSTS/{P}/like"),
        ] {
            assert_eq!(route(&Method::GET, p).unwrap_err().status, 404, "{p:?}");
        }
    }

    #[test]
    fn path_ids_are_decoded_exactly_once() {
        for (segment, id) in [
            ("auth0%7Cabc", "auth0|abc"),
            ("urn%3Apost%3A42", "urn:post:42"),
            ("1798765432109876543", "1798765432109876543"),
            ("Mixed.Case_id", "Mixed.Case_id"),
        ] {
            let post = PostId::parse(id).unwrap();
            let got = route(&Method::GET, &format!("/posts/{segment}/likes"));
            assert_eq!(got, Ok(Route::Likers(post)), "{segment}");
        }
    }

    #[test]
    fn bad_ids_are_400_naming_the_field() {
        for id in [
            "a%20b", "a%2Fb", "a%257Cb", "a%7", "%", "a%23b", "a~b", "ü", "%C3%BC", "",
        ] {
            let err = route(&Method::PUT, &format!("/posts/{id}/like")).unwrap_err();
            assert_eq!(err.status, 400, "{id:?}");
            assert!(err.message.contains("post_id"));
        }
    }
}
