//! `WWW-Authenticate` challenges from registries: which scheme they want and, for Bearer, where the token comes from.

/// What a registry asked for in its 401 answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Challenge {
    /// HTTP Basic with the user name and password.
    Basic,
    /// A token from `realm`, asked for with `service` and `scope` (the distribution token flow).
    Bearer {
        realm: String,
        service: Option<String>,
        scope: Option<String>,
    },
}

/// Reads the first challenge of a `WWW-Authenticate` header; `None` for a scheme gpudeck cannot
/// answer or a Bearer challenge without a realm.
pub(crate) fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, rest) = header
        .split_once(char::is_whitespace)
        .unwrap_or((header, ""));
    let params = parse_params(rest);
    let param = |name: &str| {
        params
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.clone())
    };
    if scheme.eq_ignore_ascii_case("basic") {
        Some(Challenge::Basic)
    } else if scheme.eq_ignore_ascii_case("bearer") {
        Some(Challenge::Bearer {
            realm: param("realm").filter(|r| !r.is_empty())?,
            service: param("service"),
            scope: param("scope"),
        })
    } else {
        None
    }
}

/// `key=value, key="quoted, \"escaped\" value"` pairs; stops at anything it cannot read, which
/// is also where a second challenge in the same header would begin.
fn parse_params(input: &str) -> Vec<(String, String)> {
    let mut params = Vec::new();
    let mut chars = input.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=' && *c != ','))
            .collect::<String>()
            .trim()
            .to_string();
        if key.is_empty() || key.contains(char::is_whitespace) || chars.next() != Some('=') {
            return params;
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let value = if chars.next_if_eq(&'"').is_some() {
            let mut value = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => value.extend(chars.next()),
                    other => value.push(other),
                }
            }
            value
        } else {
            std::iter::from_fn(|| chars.next_if(|c| *c != ','))
                .collect::<String>()
                .trim()
                .to_string()
        };
        params.push((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_hub_bearer_challenge() {
        let header = r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull""#;
        assert_eq!(
            parse_challenge(header),
            Some(Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into()),
                scope: Some("repository:library/ubuntu:pull".into()),
            })
        );
    }

    #[test]
    fn scopes_with_commas_spaces_and_escapes_survive() {
        let header = r#"bearer  realm = "http://127.0.0.1:1/token" , scope="repository:a/b:pull,push", error="insufficient \"scope\"""#;
        let Some(Challenge::Bearer {
            realm,
            service,
            scope,
        }) = parse_challenge(header)
        else {
            panic!("a bearer challenge");
        };
        assert_eq!(realm, "http://127.0.0.1:1/token");
        assert_eq!(service, None);
        assert_eq!(scope.as_deref(), Some("repository:a/b:pull,push"));
    }

    #[test]
    fn unquoted_values_and_basic() {
        assert_eq!(
            parse_challenge("Bearer realm=https://r.example/t,service=r.example"),
            Some(Challenge::Bearer {
                realm: "https://r.example/t".into(),
                service: Some("r.example".into()),
                scope: None,
            })
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="gpudeck-test""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge("Basic"), Some(Challenge::Basic));
    }

    #[test]
    fn unknown_schemes_and_realmless_bearer_are_refused() {
        assert_eq!(parse_challenge(r#"Negotiate abc"#), None);
        assert_eq!(parse_challenge(r#"Bearer service="x""#), None);
        assert_eq!(parse_challenge(""), None);
    }
}
