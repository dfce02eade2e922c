//! `gpudeck doctor --kernel-log` on logs made to exhaust it: a 50 MB line and a million Xid
//! lines are read in memory that does not grow with the file, and what is printed stays short.
//! Run in a process of its own (`support::in_own_process`), so that the peak memory it reads
//! (`VmHWM` for the in-process reads, `RUSAGE_CHILDREN` for gpudeck's) is this test's alone.

use crate::support;

use std::io::Write;
use std::path::Path;

use gpudeck::doctor::cli::kernel_log_choice;
use gpudeck::doctor::kernel_log::KernelLogChoice;
use support::{stderr, stdout, Dirs};

const MIB: u64 = 1 << 20;

/// This process's peak resident memory so far (`VmHWM`), in bytes.
fn peak() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status");
    kib * 1024
}

/// The peak resident memory of the largest child waited for so far, in bytes.
fn children_peak() -> u64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let asked = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(asked, 0);
    u64::try_from(usage.ru_maxrss).unwrap() * 1024
}

/// One Xid line whose process name is `name_bytes` long, written without holding it.
fn one_long_line(path: &Path, name_bytes: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    f.write_all(b"[ 9120.000200] NVRM: Xid (PCI:0000:9a:00): 13, pid=48211, name=")
        .unwrap();
    let chunk = vec![b'A'; 1 << 16];
    let mut left = name_bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        f.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    f.write_all(b", Graphics Exception\n").unwrap();
    f.flush().unwrap();
}

/// `count` Xid lines, each of another process.
fn many_xid_lines(path: &Path, count: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..count {
        writeln!(
            f,
            "[{}.{:06}] NVRM: Xid (PCI:0000:9a:00): 13, pid={}, name=python, Graphics SM Warp Exception",
            9000 + i / 1000,
            i % 1000,
            1000 + i
        )
        .unwrap();
    }
    f.flush().unwrap();
}

#[test]
fn huge_kernel_logs_are_read_in_flat_memory_and_print_short() {
    if !support::in_own_process(
        module_path!(),
        "huge_kernel_logs_are_read_in_flat_memory_and_print_short",
    ) {
        return;
    }
    let dirs = Dirs::new();
    let long = dirs.root.path().join("long-line.log");
    let many = dirs.root.path().join("many-xids.log");
    one_long_line(&long, 50_000_000);
    many_xid_lines(&many, 1_000_000);
    let sizes = [&long, &many].map(|p| std::fs::metadata(p).unwrap().len());

    // In this process: the reads themselves.
    let before = peak();
    let read = kernel_log_choice(Some(&long)).unwrap();
    let KernelLogChoice::Saved { log, .. } = &read else {
        panic!("{read:?}")
    };
    assert_eq!(log.xids.len(), 1);
    let name = log.xids[0].process.as_deref().unwrap();
    assert_eq!(name, format!("{}…", "A".repeat(16)));
    let after_long = peak();
    drop(read);
    let read = kernel_log_choice(Some(&many)).unwrap();
    let KernelLogChoice::Saved { log, .. } = &read else {
        panic!("{read:?}")
    };
    assert_eq!((log.xids.len(), log.earlier_xids), (50_000, 950_000));
    assert_eq!(log.xids[0].pid, Some(1000 + 950_000));
    let after_many = peak();
    drop(read);
    eprintln!(
        "in process: peak {} MiB before, +{} MiB for a {} MB line, +{} MiB more for {} MB of \
         1 M Xid lines",
        before / MIB,
        after_long.saturating_sub(before) / MIB,
        sizes[0] / 1_000_000,
        after_many.saturating_sub(after_long) / MIB,
        sizes[1] / 1_000_000,
    );
    assert!(
        after_long - before < 8 * MIB,
        "the long line took {} MiB",
        (after_long - before) / MIB
    );
    assert!(
        after_many - before < 48 * MIB,
        "the Xid lines took {} MiB",
        (after_many - before) / MIB
    );

    // gpudeck itself, on simulated GPUs: short output, flat memory.
    for (path, size) in [(&long, sizes[0]), (&many, sizes[1])] {
        let out = dirs
            .gpudeck("gpus=2")
            .args([
                "doctor",
                "--demo",
                "--docker-host",
                "unix:///nonexistent.sock",
            ])
            .arg("--kernel-log")
            .arg(path)
            .output()
            .unwrap();
        let (text, err) = (stdout(&out), stderr(&out));
        assert!(text.contains("Xid 13"), "{text}\n{err}");
        assert!(
            text.len() + err.len() < 16 * 1024,
            "{} bytes printed",
            text.len()
        );
        let rss = children_peak();
        eprintln!(
            "gpudeck doctor --kernel-log {} ({} MB): {} bytes printed, peak RSS {} MiB",
            path.file_name().unwrap().to_string_lossy(),
            size / 1_000_000,
            text.len() + err.len(),
            rss / MIB
        );
        assert!(rss < 128 * MIB, "gpudeck took {} MiB", rss / MIB);
    }
    let many_text = stdout(
        &dirs
            .gpudeck("gpus=2")
            .args([
                "doctor",
                "--demo",
                "--docker-host",
                "unix:///nonexistent.sock",
            ])
            .arg("--kernel-log")
            .arg(&many)
            .output()
            .unwrap(),
    );
    let words = many_text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("950000 more Xid lines before the last 50000"),
        "{many_text}"
    );
}
