//! UID -> user name through the C library, so NSS sources (LDAP, SSSD) answer too.

use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::Mutex;

/// `getpwuid_r` may need a large buffer for users with many fields; past this the entry is
/// treated as unknown rather than growing without bound.
const MAX_PASSWD_BUFFER: usize = 1 << 20;

/// Remembers every answer: a lookup can go over the network (LDAP) and the process table asks
/// for the same few users on every refresh.
#[derive(Debug, Default)]
pub(crate) struct UserNames {
    cache: Mutex<HashMap<u32, String>>,
}

impl UserNames {
    /// The user's name, or the numeric uid when no passwd entry exists (a container's user).
    pub(crate) fn name(&self, uid: u32) -> String {
        // A poisoned lock only means another thread panicked mid-insert; the map is still usable.
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(uid)
            .or_insert_with(|| lookup(uid).unwrap_or_else(|| uid.to_string()))
            .clone()
    }
}

/// The name of the user gpudeck runs as, for lines such as `ssh -L ... NAME@HOST`: the
/// passwd entry's, else `$USER`, else the numeric uid.
pub fn my_user_name() -> String {
    let uid = crate::private_files::current_uid();
    lookup(uid)
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| uid.to_string())
}

/// The name the password database (or NSS) gives `uid`, if any.
pub fn user_name_of(uid: u32) -> Option<String> {
    lookup(uid)
}

fn lookup(uid: u32) -> Option<String> {
    let mut size = initial_buffer_size();
    loop {
        match lookup_with_buffer(uid, size) {
            Lookup::Found(name) => return Some(name),
            Lookup::Missing => return None,
            Lookup::BufferTooSmall if size < MAX_PASSWD_BUFFER => size *= 2,
            Lookup::BufferTooSmall => return None,
        }
    }
}

#[allow(unsafe_code)]
fn initial_buffer_size() -> usize {
    // SAFETY: sysconf has no preconditions; it returns -1 when the limit is indeterminate.
    let suggested = unsafe { libc::sysconf(libc::_SC_GETPW_R_SIZE_MAX) };
    usize::try_from(suggested)
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or(1024)
        .min(MAX_PASSWD_BUFFER)
}

enum Lookup {
    Found(String),
    Missing,
    BufferTooSmall,
}

#[allow(unsafe_code)]
fn lookup_with_buffer(uid: u32, size: usize) -> Lookup {
    let mut buffer = vec![0 as libc::c_char; size];
    // SAFETY: an all-zero passwd is a valid value (null pointers, zero ids); it is only read
    // after getpwuid_r has filled it in.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer refers to live, writable memory of the stated size for the duration
    // of the call; getpwuid_r writes the strings of `entry` into `buffer`.
    let rc = unsafe {
        libc::getpwuid_r(
            uid,
            &mut entry,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut result,
        )
    };
    if rc == libc::ERANGE {
        return Lookup::BufferTooSmall;
    }
    if rc != 0 || result.is_null() || entry.pw_name.is_null() {
        return Lookup::Missing;
    }
    // SAFETY: on success pw_name points at a NUL-terminated string inside `buffer`, which is
    // still alive here.
    let name = unsafe { CStr::from_ptr(entry.pw_name) };
    Lookup::Found(name.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_root() {
        assert_eq!(UserNames::default().name(0), "root");
    }

    #[test]
    fn unknown_uid_is_numeric() {
        assert_eq!(UserNames::default().name(3_999_999_999), "3999999999");
    }

    #[test]
    fn answers_are_cached() {
        let names = UserNames::default();
        assert_eq!(names.name(0), "root");
        let cached = names.cache.lock().unwrap().get(&0).cloned();
        assert_eq!(cached.as_deref(), Some("root"));
    }
}
