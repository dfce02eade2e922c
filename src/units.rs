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
    } else if bytes >= 1024 {
        format!("{:.0}KiB", b / 1024.0)
    } else {
        format!("{bytes}B")
    }
}

/// "used/total" in GiB, e.g. "60.1/79.6GiB": the unit the CLI spells out too. One decimal below
/// 100 GiB and none above ("120/141GiB"), so the pair stays within 12 columns on every card.
pub fn memory_pair(used: Option<u64>, total: Option<u64>) -> String {
    let gib = |b: u64| {
        let g = b as f64 / GIB;
        if g < 99.95 {
            format!("{g:.1}")
        } else {
            format!("{g:.0}")
        }
    };
    match (used, total) {
        (Some(u), Some(t)) => format!("{}/{}GiB", gib(u), gib(t)),
        (None, Some(t)) => format!("{NA}/{}GiB", gib(t)),
        (Some(u), None) => format!("{}GiB/{NA}", gib(u)),
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
    timestamp(unix_ms)
        .strftime("%Y-%m-%d %H:%M:%S UTC")
        .to_string()
}

/// Unix milliseconds as a moment to format; past the end of jiff's range (the end of the year
/// 9999) it stays at that end.
pub(crate) fn timestamp(unix_ms: u64) -> jiff::Timestamp {
    i64::try_from(unix_ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .unwrap_or(jiff::Timestamp::MAX)
}

/// How long a run ran, in the same words in `gpudeck runs` and the Runs tab: `3h04m`, `12m05s`
/// or `42s`.
pub fn run_duration(ms: u64) -> String {
    let secs = ms / 1000;
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}h{m:02}m")
    } else if m > 0 {
        format!("{m}m{s:02}s")
    } else {
        format!("{s}s")
    }
}

/// A count and its noun, in one form everywhere (CLI and dashboard): "1 image", "2 images",
/// "0 images"; nouns ending in s, x, ch or sh take "es" ("3 processes").
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {}", plural_noun(noun))
    }
}

/// [`plural`], but "no images" for none, where a sentence reads better than a zero.
pub fn plural_or_no(n: usize, noun: &str) -> String {
    if n == 0 {
        format!("no {}", plural_noun(noun))
    } else {
        plural(n, noun)
    }
}

fn plural_noun(noun: &str) -> String {
    if ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end)) {
        format!("{noun}es")
    } else {
        format!("{noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times_read_as_dates() {
        assert_eq!(utc_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_time(1_764_072_187_000), "2025-11-25 12:03:07 UTC");
        assert_eq!(utc_time(951_825_600_000), "2000-02-29 12:00:00 UTC");
        // Past jiff's range (the end of the year 9999) it stays at the end instead of failing.
        assert_eq!(utc_time(u64::MAX), "9999-12-30 22:00:00 UTC");
    }

    #[test]
    fn formats_match_what_users_compare_against() {
        assert_eq!(mib(81559 * 1024 * 1024), "81559MiB");
        assert_eq!(
            memory_pair(Some(3 * 1024 * 1024 * 1024), Some(80 * 1024 * 1024 * 1024)),
            "3.0/80.0GiB"
        );
        assert_eq!(
            memory_pair(
                Some(120 * 1024 * 1024 * 1024),
                Some(141 * 1024 * 1024 * 1024)
            ),
            "120/141GiB"
        );
        assert_eq!(
            memory_pair(None, Some(80 * 1024 * 1024 * 1024)),
            "n/a/80.0GiB"
        );
        assert_eq!(power_pair(Some(612.4), Some(700.0)), "612/700W");
        assert_eq!(pcie(Some(5), Some(16)), "Gen5 x16");
        assert_eq!(pct(None), "n/a");
        assert_eq!(truncate("python train.py", 8), "python …");
        assert_eq!(human_bytes(999), "999B");
        assert_eq!(human_bytes(5_600_000_000), "5.2GiB");
        assert_eq!(run_duration(42_999), "42s");
        assert_eq!(run_duration(12 * 60_000 + 5_000), "12m05s");
        assert_eq!(run_duration(3 * 3_600_000 + 4 * 60_000), "3h04m");
        assert_eq!(age(45), "45s");
        assert_eq!(age(3 * 3600 + 5 * 60), "3h 5m");
        assert_eq!(age(2 * 86_400 + 3600), "2d 1h");
    }

    #[test]
    fn counts_read_as_words() {
        assert_eq!(plural(1, "warning"), "1 warning");
        assert_eq!(plural(2, "warning"), "2 warnings");
        assert_eq!(plural(0, "warning"), "0 warnings");
        assert_eq!(plural(1, "image"), "1 image");
        assert_eq!(plural(12, "GPU"), "12 GPUs");
        assert_eq!(plural(1, "process"), "1 process");
        assert_eq!(plural(3, "process"), "3 processes");
        assert_eq!(plural(2, "rank"), "2 ranks");
        assert_eq!(plural_or_no(0, "process"), "no processes");
        assert_eq!(plural_or_no(0, "image"), "no images");
        assert_eq!(plural_or_no(1, "image"), "1 image");
        assert_eq!(plural_or_no(4, "run"), "4 runs");
    }
}
