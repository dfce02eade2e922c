//! A hostile neighbour on a shared machine: a second real user (made by the test with
//! `useradd`, run with `setpriv`) who watches /proc for a service's command line and binds its
//! port before the service does. gpudeck must send the neighbour nothing (a notebook's token
//! least of all), never call the service ready, and say the service lost its port. And a
//! notebook started again gets a new token, unless it is asked to keep the old one.

use std::process::{Child, Command, Stdio};

use crate::support::runs::{gpudeck, output, record, GroupGuard};
use crate::support::{services, stderr, stdout, Dirs};

/// The neighbour's account, made once per machine.
const NEIGHBOUR: &str = "gpudeck-nbr";

/// Polls /proc for a command line holding `marker` and `--port`, binds that port on 127.0.0.1
/// first, and answers every request with 200 `{}`, writing each request to the log.
const SQUATTER: &str = r#"
import os, re, socket, sys, time
marker, log = sys.argv[1], sys.argv[2]
deadline = time.time() + 120
port = None
while port is None and time.time() < deadline:
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            text = open('/proc/%s/cmdline' % pid, 'rb').read().replace(b'\0', b' ').decode('utf8', 'replace')
        except OSError:
            continue
        m = re.search(r'--port[= ](\d+)', text)
        if marker in text and m:
            port = int(m.group(1))
            break
if port is None:
    sys.exit(3)
s = socket.socket()
s.bind(('127.0.0.1', port))
s.listen(16)
with open(log, 'a') as f:
    f.write('bound %d\n' % port)
s.settimeout(0.5)
while time.time() < deadline:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(2)
    try:
        data = c.recv(65536)
    except OSError:
        data = b''
    with open(log, 'a') as f:
        f.write(data.decode('latin1') + '\n----\n')
    try:
        c.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}')
    except OSError:
        pass
    c.close()
"#;

/// The neighbour's uid and gid, the account made if it is not there; `None` (after saying why)
/// where another user's process cannot be started (not root, no setpriv or useradd).
fn neighbour(test: &str) -> Option<(u32, u32)> {
    // SAFETY: getuid cannot fail.
    let root = unsafe { libc::getuid() } == 0;
    let why = "a second user's process needs root (setpriv)";
    if !crate::support::real::have(crate::support::real::Part::Root, test, root, why) {
        return None;
    }
    let id = |flag: &str| {
        Command::new("id")
            .args([flag, NEIGHBOUR])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .trim()
                    .parse::<u32>()
                    .ok()
            })
    };
    if id("-u").is_none() {
        let made = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                NEIGHBOUR,
            ])
            .output()
            .expect("useradd runs");
        // Another test binary may have made it at the same moment.
        assert!(
            made.status.success() || id("-u").is_some(),
            "useradd {NEIGHBOUR}: {}",
            String::from_utf8_lossy(&made.stderr)
        );
    }
    Some((
        id("-u").expect("the neighbour's uid"),
        id("-g").expect("gid"),
    ))
}

/// The neighbour's squatter, killed when dropped.
struct Squatter {
    child: Child,
    log: std::path::PathBuf,
}

impl Squatter {
    fn start((uid, gid): (u32, u32), marker: &str, dirs: &Dirs) -> Squatter {
        let log = dirs.root.path().join("neighbour.log");
        std::fs::write(&log, "").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
        // The neighbour must reach the log through the test's private temp dirs.
        let mut dir = log.parent();
        while let Some(d) = dir.filter(|d| d.starts_with(dirs.root.path())) {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
            dir = d.parent();
        }
        let child = Command::new("setpriv")
            .args([
                &format!("--reuid={uid}"),
                &format!("--regid={gid}"),
                "--clear-groups",
                // The system's Python: a user's (pyenv under /root) is not the neighbour's to run.
                "/usr/bin/python3",
                "-c",
                SQUATTER,
                marker,
            ])
            .arg(&log)
            .stdin(Stdio::null())
            .spawn()
            .expect("setpriv starts the neighbour");
        Squatter { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Squatter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the service with the neighbour watching for it, and checks what a victim must see:
/// no token sent, not ready, the port named as lost to that user.
fn race(test: &str, program: services::Program, kind: &[&str], what: &str) {
    let Some(program) = services::or_skip(test, program) else {
        return;
    };
    let Some(ids) = neighbour(test) else {
        return;
    };
    let dirs = Dirs::new();
    let work = dirs
        .root
        .path()
        .join(format!("victim-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let squatter = Squatter::start(ids, &work.display().to_string(), &dirs);
    let bin = program.parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut args: Vec<&str> = kind.to_vec();
    let work_arg = work.display().to_string();
    if kind[0] == "tensorboard" {
        args.push(&work_arg);
    }
    let out = gpudeck(&dirs, &args)
        .args(if kind[0] == "notebook" {
            vec!["--workdir", &work_arg]
        } else {
            vec![]
        })
        .env("PATH", &path)
        .output()
        .expect("gpudeck runs");
    let said = stderr(&out);
    // Messages are wrapped to the terminal: read them as one line.
    let flat = said.split_whitespace().collect::<Vec<_>>().join(" ");
    let id = stdout(&out).trim().to_string();
    let _guard =
        (!id.is_empty()).then(|| GroupGuard(record(&dirs, &id)["process_group"]["pid"].as_i64()));
    let log = squatter.log();
    assert!(
        log.starts_with("bound "),
        "the neighbour did not get the port first, so this test tested nothing: {log}\n{said}"
    );
    assert!(!out.status.success(), "the start succeeded: {said}");
    assert!(!said.contains("is ready"), "called ready: {said}");
    assert!(
        flat.contains("it lost its port")
            && flat.contains(&format!("held by another user's process (user {NEIGHBOUR}")),
        "{said}"
    );
    assert!(flat.contains(what), "{said}");
    let lower = log.to_lowercase();
    assert!(
        !lower.contains("authorization") && !lower.contains("token"),
        "the neighbour was sent: {log}"
    );
    if !id.is_empty() {
        let listed = output(&dirs, &["services", "--json"]);
        assert!(
            !stdout(&listed).contains("\"health\": \"ready\""),
            "{}",
            stdout(&listed)
        );
    }
}

#[test]
fn a_neighbour_who_takes_a_notebooks_port_gets_no_token_and_the_start_says_so() {
    race(
        "a_neighbour_who_takes_a_notebooks_port_gets_no_token_and_the_start_says_so",
        services::jupyter(),
        &["notebook", "--host", "--gpus", "0"],
        "JupyterLab ended before it answered",
    );
}

#[test]
fn a_neighbour_who_takes_a_tensorboards_port_is_not_trusted_as_it() {
    race(
        "a_neighbour_who_takes_a_tensorboards_port_is_not_trusted_as_it",
        services::tensorboard(),
        &["tensorboard", "--host"],
        "TensorBoard ended before it answered",
    );
}
