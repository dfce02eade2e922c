//! `/proc/PID/stat`: a process's state, group, session, start time and CPU time.

/// What `/proc/PID/stat` says about a live process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// R, S, D, Z (exited, not yet reaped), X (dead), ...
    pub state: char,
    pub pgid: u32,
    pub session: u32,
    pub start_ticks: u64,
    /// CPU time in user and kernel mode so far, in clock ticks (fields 14 and 15).
    pub cpu_ticks: u64,
}

impl ProcStat {
    /// The process's stat, or `None` when there is no such process.
    pub fn read(pid: u32) -> Option<ProcStat> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        ProcStat::parse(&text)
    }

    /// Parses a stat line; the command name is in parentheses and may hold spaces or `)`.
    pub fn parse(text: &str) -> Option<ProcStat> {
        let after_name = &text[text.rfind(')')? + 1..];
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        // Fields after the name start at field 3 (state); starttime is field 22.
        let field = |n: usize| fields.get(n - 3).copied();
        Some(ProcStat {
            state: field(3)?.chars().next()?,
            pgid: field(5)?.parse().ok()?,
            session: field(6)?.parse().ok()?,
            start_ticks: field(22)?.parse().ok()?,
            cpu_ticks: field(14)?.parse::<u64>().ok()? + field(15)?.parse::<u64>().ok()?,
        })
    }

    /// Running or sleeping, not a zombie waiting to be reaped.
    pub fn is_alive(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Every process id in /proc now (none when /proc cannot be read).
pub fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_lines_with_awkward_names() {
        let line = "4242 (my (odd) prog) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100";
        let stat = ProcStat::parse(line).unwrap();
        assert_eq!(stat.state, 'S');
        assert_eq!((stat.pgid, stat.session), (4242, 4242));
        assert_eq!(stat.start_ticks, 987_654);
        assert_eq!(stat.cpu_ticks, 3, "utime 1 + stime 2");
        assert!(stat.is_alive());
        let zombie = line.replace(") S ", ") Z ");
        assert!(!ProcStat::parse(&zombie).unwrap().is_alive());
        assert_eq!(ProcStat::parse("garbage"), None);
    }
}
