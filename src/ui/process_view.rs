//! One process's view (Enter on the Processes tab): its whole command line, when it started and
//! for how long, its CPU and host memory, its container, and its share of each GPU it uses.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};

use super::style::Styles;
use crate::app::state::AppState;
use crate::gpu::process_watch::PROCESS_UTIL_EVERY;
use crate::gpu::{GpuProcess, ProcessKind};
use crate::units::{self, NA};

const LABEL_WIDTH: usize = 10;

pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, pid: u32, s: &Styles) {
    let entries: Vec<&GpuProcess> = state
        .data()
        .into_iter()
        .flat_map(|d| d.samples.iter().flat_map(|g| g.processes.iter()))
        .filter(|p| p.pid == pid)
        .collect();
    let Some(first) = entries.first() else {
        gone(area, buf, pid, s);
        return;
    };
    let title = format!(
        " Process {pid} · {} ",
        first.user.as_deref().unwrap_or("unknown user")
    );
    let block = Block::bordered()
        .title(Span::styled(title, s.title()))
        .border_style(s.border());
    let command = first.command.as_deref().unwrap_or(NA);
    let width = usize::from(area.width.saturating_sub(2)).saturating_sub(LABEL_WIDTH);
    let mut lines: Vec<Line<'static>> = wrap(command, width)
        .into_iter()
        .enumerate()
        .map(|(i, part)| field(if i == 0 { "Command" } else { "" }, part, s.text(), s))
        .collect();
    lines.extend([
        field("Started", started(first, state.now), s.text(), s),
        field("CPU", cpu(first), s.text(), s),
        field("Memory", host_memory(first), s.text(), s),
        field("Container", container(first), s.text(), s),
    ]);
    for p in &entries {
        lines.push(field(
            &format!("GPU {}", p.gpu_index),
            gpu_use(p),
            s.text(),
            s,
        ));
    }
    lines.push(Line::default());
    lines.push(Line::styled(
        format!(
            "GPU shares are read every {} s while this tab is shown. Esc: back to the list; \
             x: kill this process.",
            PROCESS_UTIL_EVERY.as_secs()
        ),
        s.muted(),
    ));
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(block)
        .render(area, buf);
}

fn gone(area: Rect, buf: &mut Buffer, pid: u32, s: &Styles) {
    let block = Block::bordered()
        .title(Span::styled(format!(" Process {pid} "), s.title()))
        .border_style(s.border());
    Paragraph::new(vec![
        Line::styled(
            format!("Process {pid} has exited: no GPU lists it any more."),
            s.warn(),
        ),
        Line::styled("Esc goes back to the process list.", s.muted()),
    ])
    .wrap(Wrap { trim: false })
    .block(block)
    .render(area, buf);
}

/// `text` in lines of at most `width` characters, broken between words where it can be.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        while let Some(line) = lines.last_mut() {
            let used = line.chars().count();
            let gap = usize::from(used > 0);
            if used + gap + word.len() <= width {
                if gap == 1 {
                    line.push(' ');
                }
                line.extend(word.iter());
                break;
            }
            if used == 0 {
                // A word longer than a line: cut it.
                let rest = word.split_off(width);
                line.extend(word.iter());
                word = rest;
            }
            lines.push(String::new());
        }
    }
    lines
}

fn field(label: &str, value: String, style: Style, s: &Styles) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{label:<LABEL_WIDTH$}"), s.muted()),
        Span::styled(value, style),
    ])
}

fn started(p: &GpuProcess, now_s: i64) -> String {
    match p.identity.and_then(|i| i.started_unix_ms) {
        Some(ms) => {
            let elapsed = (now_s.max(0) as u64 * 1000).saturating_sub(ms) / 1000;
            format!(
                "{} · running for {}",
                units::utc_time(ms),
                units::age(elapsed as i64)
            )
        }
        None => format!("{NA} (its start time cannot be read)"),
    }
}

fn cpu(p: &GpuProcess) -> String {
    match p.cpu_pct {
        Some(pct) => format!("{pct:.0}% of one core"),
        None => format!("{NA} (measured from the second reading on)"),
    }
}

fn host_memory(p: &GpuProcess) -> String {
    p.host_memory_bytes.map_or_else(
        || format!("{NA} (host memory cannot be read)"),
        |b| format!("{} resident on the host", units::human_bytes(b)),
    )
}

fn container(p: &GpuProcess) -> String {
    p.container.as_ref().map_or_else(
        || "none: it runs on the host".to_string(),
        |c| format!("{} ({})", c.short_id(), c.runtime),
    )
}

/// Memory on one GPU, and the share of it over the last read.
fn gpu_use(p: &GpuProcess) -> String {
    let kind = match p.kind {
        ProcessKind::Compute => "compute",
        ProcessKind::Graphics => "graphics",
    };
    let memory = p
        .used_memory_bytes
        .map_or_else(|| NA.to_string(), units::mib);
    let share = match p.gpu_util {
        Some(u) => format!(
            "SM {}% · memory {}% · encoder {}% · decoder {}%",
            u.sm_pct, u.mem_pct, u.enc_pct, u.dec_pct
        ),
        None => "utilisation not reported (yet: it is read every few seconds)".to_string(),
    };
    format!("{memory} ({kind}) · {share}")
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wraps_between_words_and_cuts_a_word_longer_than_a_line() {
        assert_eq!(
            wrap("python train.py --epochs 90", 16),
            ["python train.py", "--epochs 90"]
        );
        assert_eq!(
            wrap("run /a/very/long/path/to/a/file.json now", 10),
            ["run", "/a/very/lo", "ng/path/to", "/a/file.js", "on now"]
        );
        assert_eq!(wrap("", 10), [""]);
    }
}
