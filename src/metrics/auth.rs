//! Basic authentication against bcrypt hashes, as Prometheus exporters check it: a password is
//! hashed once per user and password (bcrypt is slow on purpose), then remembered for a while.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// How long a checked password is remembered (so a scrape every 15 s costs one bcrypt an hour).
const REMEMBER: Duration = Duration::from_secs(3600);
/// At most this many remembered (user, password) pairs: a client guessing cannot grow memory.
const REMEMBERED_MAX: usize = 64;
/// At most this many remembered wrong pairs, kept apart from the right ones so that a flood of
/// guesses never pushes a right password out.
const REFUSED_MAX: usize = 1024;

/// The users of a web configuration and the passwords already found right (and wrong).
#[derive(Debug)]
pub struct BasicAuth {
    users: BTreeMap<String, String>,
    remembered: Mutex<HashMap<[u8; 32], Instant>>,
    refused: Mutex<HashMap<[u8; 32], Instant>>,
}

/// What a request's `Authorization` header amounts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Denied,
}

impl BasicAuth {
    /// Users and their bcrypt hashes (`$2a$`, `$2b$`, `$2y$`); anything else is refused now,
    /// not at the first scrape.
    pub fn new(users: BTreeMap<String, String>) -> Result<BasicAuth, String> {
        for (user, hash) in &users {
            if user.contains(':') {
                return Err(format!(
                    "basic_auth_users: the user name {user:?} holds a ':', which basic \
                     authentication cannot carry"
                ));
            }
            if hash.parse::<bcrypt::HashParts>().is_err() {
                return Err(format!(
                    "basic_auth_users.{user}: the password must be a bcrypt hash such as \
                     `htpasswd -nBC 10 \"\" | tr -d ':\\n'` prints ($2y$10$...), not the password \
                     itself"
                ));
            }
        }
        Ok(BasicAuth {
            users,
            remembered: Mutex::new(HashMap::new()),
            refused: Mutex::new(HashMap::new()),
        })
    }

    /// The user names, for logs.
    pub fn users(&self) -> Vec<&str> {
        self.users.keys().map(String::as_str).collect()
    }

    /// What is already known of an `Authorization` header value, at no cost: no header or no
    /// Basic credentials is denied, a pair checked before (right or wrong) is what it was;
    /// `None`: the pair must be checked ([`check`](Self::check)). Called before waiting for a
    /// turn at bcrypt, so a scrape with a known password never queues behind guesses.
    pub fn remembered(&self, header: Option<&str>) -> Option<Verdict> {
        let Some((user, password)) = header.and_then(decode) else {
            return Some(Verdict::Denied);
        };
        let key = fingerprint(&user, &password);
        let now = Instant::now();
        let fresh = |map: &Mutex<HashMap<[u8; 32], Instant>>| {
            map.lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&key)
                .is_some_and(|at| now.duration_since(*at) < REMEMBER)
        };
        if fresh(&self.remembered) {
            return Some(Verdict::Allowed);
        }
        if fresh(&self.refused) {
            return Some(Verdict::Denied);
        }
        None
    }

    /// Checks an `Authorization` header value; slow (bcrypt) the first time a pair is seen, so
    /// call it off the async threads.
    pub fn check(&self, header: Option<&str>) -> Verdict {
        if let Some(known) = self.remembered(header) {
            return known;
        }
        let Some((user, password)) = header.and_then(decode) else {
            return Verdict::Denied;
        };
        let key = fingerprint(&user, &password);
        let now = Instant::now();
        let right = match self.users.get(&user) {
            Some(hash) => bcrypt::verify(password.as_bytes(), hash).unwrap_or(false),
            None => {
                // As long as a wrong password takes, so a guess cannot tell which users exist.
                if let Some(hash) = self.users.values().next() {
                    let _ = bcrypt::verify(password.as_bytes(), hash);
                }
                false
            }
        };
        if !right {
            let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
            refused.retain(|_, at| now.duration_since(*at) < REMEMBER);
            if refused.len() >= REFUSED_MAX {
                refused.clear();
            }
            refused.insert(key, now);
            return Verdict::Denied;
        }
        let mut remembered = self.remembered.lock().unwrap_or_else(|e| e.into_inner());
        remembered.retain(|_, at| now.duration_since(*at) < REMEMBER);
        if remembered.len() >= REMEMBERED_MAX {
            remembered.clear();
        }
        remembered.insert(key, now);
        Verdict::Allowed
    }
}

/// `Basic base64(user:password)` -> (user, password).
fn decode(header: &str) -> Option<(String, String)> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

/// Remembered pairs are kept as a hash, never as the password.
fn fingerprint(user: &str, password: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(user.as_bytes());
    h.update([0]);
    h.update(password.as_bytes());
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(user: &str, password: &str) -> String {
        let raw = format!("{user}:{password}");
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }

    fn auth() -> BasicAuth {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        BasicAuth::new(BTreeMap::from([("prom".to_owned(), hash)])).unwrap()
    }

    #[test]
    fn the_right_password_is_allowed_and_remembered() {
        let a = auth();
        assert_eq!(a.check(Some(&header("prom", "s3cret"))), Verdict::Allowed);
        assert_eq!(a.remembered.lock().unwrap().len(), 1);
        assert_eq!(a.check(Some(&header("prom", "s3cret"))), Verdict::Allowed);
    }

    #[test]
    fn wrong_passwords_unknown_users_and_other_schemes_are_denied() {
        let a = auth();
        assert_eq!(a.check(Some(&header("prom", "guess"))), Verdict::Denied);
        assert_eq!(a.check(Some(&header("root", "s3cret"))), Verdict::Denied);
        assert_eq!(a.check(Some("Bearer abc")), Verdict::Denied);
        assert_eq!(a.check(Some("Basic !!!")), Verdict::Denied);
        assert_eq!(a.check(None), Verdict::Denied);
        assert!(a.remembered.lock().unwrap().is_empty());
    }

    #[test]
    fn known_pairs_right_and_wrong_are_answered_without_bcrypt_and_guesses_never_evict_the_right_one(
    ) {
        let a = auth();
        let right = header("prom", "s3cret");
        assert_eq!(a.remembered(Some(&right)), None, "not checked yet");
        assert_eq!(a.remembered(None), Some(Verdict::Denied));
        assert_eq!(a.check(Some(&right)), Verdict::Allowed);
        assert_eq!(a.remembered(Some(&right)), Some(Verdict::Allowed));
        // More distinct guesses than the store of right pairs holds (which, shared, would
        // have been cleared by them); each wrong one is then known without bcrypt.
        for i in 0..REMEMBERED_MAX + 8 {
            let guess = header("prom", &format!("guess{i}"));
            assert_eq!(a.check(Some(&guess)), Verdict::Denied);
            assert_eq!(a.remembered(Some(&guess)), Some(Verdict::Denied));
        }
        assert!(a.refused.lock().unwrap().len() <= REFUSED_MAX);
        assert_eq!(a.remembered(Some(&right)), Some(Verdict::Allowed));
    }

    #[test]
    fn a_password_in_place_of_a_hash_is_refused_at_load() {
        let err =
            BasicAuth::new(BTreeMap::from([("prom".to_owned(), "s3cret".to_owned())])).unwrap_err();
        assert!(err.contains("bcrypt hash"), "{err}");
        assert!(err.contains("htpasswd"), "{err}");
    }
}
