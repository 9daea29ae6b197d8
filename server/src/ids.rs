//! Game ids and their owners: what a client may name a game, and which stored game a name reaches.
//!
//! A front end that serves many people on one server (the SillyTavern server plugin with SillyTavern's
//! user accounts on, a hosted site) names the person a request is for in the `Statecraft-Owner`
//! header. Every game such a request names, makes, lists or deletes is then that owner's, and no id
//! reaches another owner's game. The header scopes; it does not authenticate: whoever may call the
//! server (loopback, or its token) may name any owner, so the front end authenticates its people and
//! sets the header for them (docs/http.md, "Owners"). A request without the header reaches the games
//! made without one.
//!
//! In storage an owner's game is the one key `OWNER/ID`. Neither an id nor an owner may contain `/`,
//! so a key says whose game it is, and no id a client sends can spell another owner's key; a key
//! without `/` is a game without owner. The receipts of an owner's creates live under the scope
//! `OWNER/` (`db::create_scope`), which is no game's key. This module must not know the endpoints.

use axum::http::request::Parts;
use statecraft_saves::{Listing, Storage, StorageError};

use crate::error::{ApiError, Kind};

/// The header that names a request's owner.
pub(crate) const OWNER_HEADER: &str = "statecraft-owner";

/// The longest owner name, in bytes.
const MAX_OWNER_LEN: usize = 64;

/// Whose games a request reaches: an owner's, or (`None`) those made without one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Owner(Option<String>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Owner {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Owner, ApiError> {
        Owner::of(&parts.headers)
    }
}

impl Owner {
    /// The owner a request names in its headers.
    pub(crate) fn of(headers: &axum::http::HeaderMap) -> Result<Owner, ApiError> {
        let Some(value) = headers.get(OWNER_HEADER) else {
            return Ok(Owner(None));
        };
        let name = value.to_str().unwrap_or("\u{fffd}");
        if name.is_empty()
            || name.len() > MAX_OWNER_LEN
            || !name.bytes().all(id_byte)
            || name == "."
            || name == ".."
        {
            return Err(ApiError::new(
                Kind::BadRequest,
                format!(
                    "the {OWNER_HEADER} header \"{name}\" is not an owner: use 1 to \
                     {MAX_OWNER_LEN} letters, digits, '-', '_', '.' or '~' (not \".\" or \"..\")"
                ),
            ));
        }
        Ok(Owner(Some(name.to_owned())))
    }

    /// The storage key of the game this owner calls `id` (an id [`check_id`] accepts).
    pub(crate) fn key(&self, id: &str) -> String {
        match &self.0 {
            Some(owner) => format!("{owner}/{id}"),
            None => id.to_owned(),
        }
    }

    /// A page of this owner's games, ids as the owner knows them: at most `limit` games after the
    /// id `after`, and the id to ask the next page after (`None` on the last page). Time: a read of
    /// `limit + 1` games, and for an owner-less listing one more read for each owner whose games lie
    /// among them.
    pub(crate) fn page(
        &self,
        storage: &dyn Storage,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<Listing>, Option<String>), StorageError> {
        // One more than asked tells whether another page follows.
        let wanted = limit + 1;
        let mut games = Vec::with_capacity(wanted);
        match &self.0 {
            // An owner's keys are the ids that start with `OWNER/`: one contiguous run in id order,
            // after `OWNER/` itself (no key is that short).
            Some(owner) => {
                let prefix = format!("{owner}/");
                let from = format!("{prefix}{}", after.unwrap_or(""));
                for mut game in storage.list(Some(&from), wanted)? {
                    let Some(id) = game.id.strip_prefix(&prefix) else {
                        break;
                    };
                    game.id = id.to_owned();
                    games.push(game);
                }
            }
            // The games without owner are the keys without `/`, which other owners' runs interleave:
            // each run met is stepped over whole, past its longest possible key.
            None => {
                let mut from = after.unwrap_or("").to_owned();
                'pages: loop {
                    let page = storage.list(Some(&from), wanted)?;
                    let ended = page.len() < wanted;
                    for game in page {
                        if let Some((owner, _)) = game.id.split_once('/') {
                            from = format!("{owner}/{}", "~".repeat(MAX_ID_LEN + 1));
                            continue 'pages;
                        }
                        from.clone_from(&game.id);
                        games.push(game);
                        if games.len() == wanted {
                            break 'pages;
                        }
                    }
                    if ended {
                        break;
                    }
                }
            }
        }
        let next = (games.len() > limit).then(|| games[limit - 1].id.clone());
        games.truncate(limit);
        Ok((games, next))
    }
}

/// The id a client knows a stored game by: its key without the owner.
pub(crate) fn shown(key: &str) -> &str {
    key.rsplit_once('/').map_or(key, |(_, id)| id)
}

/// The longest game id, in bytes.
const MAX_ID_LEN: usize = 128;

/// The bytes of an id or an owner name: safe in a URL path segment and in a header.
fn id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~')
}

/// Checks a game id: 1 to 128 characters of letters, digits, `-`, `_`, `.` and `~` (safe in a path),
/// other than `.` and `..`. Those two are dot segments, which every URL client resolves away before
/// sending (`/v1/games/../log` is `/v1/log`), so a game named so could never be reached.
pub(crate) fn check_id(id: &str) -> Result<(), ApiError> {
    if id.is_empty() || id.len() > MAX_ID_LEN || !id.bytes().all(id_byte) {
        return Err(ApiError::new(
            Kind::BadRequest,
            format!(
                "\"{id}\" is not a game id: use 1 to 128 letters, digits, '-', '_', '.' or '~'"
            ),
        ));
    }
    if id == "." || id == ".." {
        return Err(ApiError::new(
            Kind::BadRequest,
            format!(
                "\"{id}\" is not a game id: URL clients resolve the dot segments \".\" and \"..\" \
                 away, so no request could reach the game"
            ),
        ));
    }
    Ok(())
}

/// A new game id: 128 random bits, so that processes sharing a database never collide.
pub(crate) fn new_id() -> Result<String, ApiError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| {
        ApiError::new(
            Kind::Damaged,
            format!("no randomness for a game id: {error}"),
        )
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(name: &str) -> Owner {
        Owner(Some(name.to_owned()))
    }

    #[test]
    fn keys_tell_their_owner_and_show_the_clients_id() {
        assert_eq!(owner("alice").key("chat-1"), "alice/chat-1");
        assert_eq!(Owner::default().key("chat-1"), "chat-1");
        assert_eq!(shown("alice/chat-1"), "chat-1");
        assert_eq!(shown("chat-1"), "chat-1");
    }

    #[test]
    fn owner_names_are_read_strictly() {
        let named = |value: &str| {
            let mut headers = axum::http::HeaderMap::new();
            headers.insert(OWNER_HEADER, value.parse().expect("a header value"));
            Owner::of(&headers)
        };
        assert_eq!(
            named("default-user").expect("an owner"),
            owner("default-user")
        );
        for bad in ["", "a/b", "..", ".", "a b", &"x".repeat(65)] {
            let error = named(bad).expect_err(bad);
            assert_eq!(error.kind, Kind::BadRequest, "{bad}");
            assert!(error.message.contains(OWNER_HEADER), "{}", error.message);
        }
        assert_eq!(
            Owner::of(&axum::http::HeaderMap::new()).expect("none"),
            Owner::default()
        );
    }
}
