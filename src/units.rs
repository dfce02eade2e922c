//! Formatting of quantities (bytes, watts, percentages, missing values) shared by the TUI and reports.

/// What a metric the device cannot report shows as.
pub const NA: &str = "n/a";

const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * MIB;

/// Bytes as MiB, the unit nvidia-smi uses, so numbers can be compared at a glance.
pub fn mib(bytes: u64) -> String {
    format!("{:.0}MiB", bytes as f64 / MIB)
}

/// Bytes in the most readable binary unit.
pub fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= GIB {
        format!("{:.1}GiB", b / GIB)
    } else if b >= MIB {
        format!("{:.0}MiB", b / MIB)
    } else {
        format!("{:.0}KiB", b / 1024.0)
    }
}

/// "used/total" in GiB with one decimal, e.g. "60.1/79.6G".
pub fn memory_pair(used: Option<u64>, total: Option<u64>) -> String {
    match (used, total) {
        (Some(u), Some(t)) => format!("{:.1}/{:.1}G", u as f64 / GIB, t as f64 / GIB),
        (None, Some(t)) => format!("{NA}/{:.1}G", t as f64 / GIB),
        (Some(u), None) => format!("{:.1}G/{NA}", u as f64 / GIB),
        (None, None) => NA.to_string(),
    }
}

pub fn pct(v: Option<u32>) -> String {
    v.map_or_else(|| NA.to_string(), |v| format!("{v}%"))
}

pub fn celsius(v: Option<u32>) -> String {
    v.map_or_else(|| NA.to_string(), |v| format!("{v}°C"))
}

pub fn mhz(v: Option<u32>) -> String {
    v.map_or_else(|| NA.to_string(), |v| format!("{v}MHz"))
}

/// Power draw and limit, e.g. "612/700W".
pub fn power_pair(draw: Option<f64>, limit: Option<f64>) -> String {
    match (draw, limit) {
        (Some(d), Some(l)) => format!("{d:.0}/{l:.0}W"),
        (Some(d), None) => format!("{d:.0}W"),
        (None, Some(l)) => format!("{NA}/{l:.0}W"),
        (None, None) => NA.to_string(),
    }
}

/// A PCIe link as "Gen5 x16".
pub fn pcie(generation: Option<u32>, width: Option<u32>) -> String {
    match (generation, width) {
        (Some(g), Some(w)) => format!("Gen{g} x{w}"),
        (Some(g), None) => format!("Gen{g}"),
        (None, Some(w)) => format!("x{w}"),
        (None, None) => NA.to_string(),
    }
}

pub fn yes_no(v: Option<bool>, yes: &str, no: &str) -> String {
    v.map_or_else(|| NA.to_string(), |b| if b { yes } else { no }.to_string())
}

pub fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| NA.to_string(), |v| v.to_string())
}

/// Shortens `s` to `max` characters, marking the cut with an ellipsis.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(1);
    let mut out: String = s.chars().take(keep).collect();
    out.push('…');
    out
}

/// A duration in seconds as the one or two largest units: "45s", "12m", "3h 5m", "4d 2h".
pub fn age(secs: i64) -> String {
    let s = secs.max(0);
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h {}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// A moment as "2026-11-25 12:03:07 UTC" (UTC: the TUI reads no time zone database).
pub fn utc_time(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times_read_as_dates() {
        assert_eq!(utc_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_time(1_764_072_187_000), "2025-11-25 12:03:07 UTC");
        assert_eq!(utc_time(951_825_600_000), "2000-02-29 12:00:00 UTC");
    }

    #[test]
    fn formats_match_what_users_compare_against() {
        assert_eq!(mib(81559 * 1024 * 1024), "81559MiB");
        assert_eq!(
            memory_pair(Some(3 * 1024 * 1024 * 1024), Some(80 * 1024 * 1024 * 1024)),
            "3.0/80.0G"
        );
        assert_eq!(power_pair(Some(612.4), Some(700.0)), "612/700W");
        assert_eq!(pcie(Some(5), Some(16)), "Gen5 x16");
        assert_eq!(pct(None), "n/a");
        assert_eq!(truncate("python train.py", 8), "python …");
        assert_eq!(age(45), "45s");
        assert_eq!(age(3 * 3600 + 5 * 60), "3h 5m");
        assert_eq!(age(2 * 86_400 + 3600), "2d 1h");
    }
}
