//! Styles derived from the theme, so every panel colours meaning the same way (and NO_COLOR still reads).

use ratatui::style::{Color, Modifier, Style};

use crate::config::Theme;

/// Semantic styles for one frame.
pub struct Styles<'t> {
    pub theme: &'t Theme,
}

impl<'t> Styles<'t> {
    pub fn new(theme: &'t Theme) -> Self {
        Self { theme }
    }

    fn monochrome(&self) -> bool {
        self.theme.selected_bg == Color::Reset
    }

    pub fn text(&self) -> Style {
        Style::default().fg(self.theme.fg)
    }

    pub fn muted(&self) -> Style {
        let s = Style::default().fg(self.theme.muted);
        if self.monochrome() {
            s.add_modifier(Modifier::DIM)
        } else {
            s
        }
    }

    /// A message about the past: dimmed in every theme, so it reads as old without colour too.
    pub fn stale(&self) -> Style {
        Style::default()
            .fg(self.theme.muted)
            .add_modifier(Modifier::DIM)
    }

    pub fn accent(&self) -> Style {
        Style::default().fg(self.theme.accent)
    }

    pub fn border(&self) -> Style {
        Style::default().fg(self.theme.border)
    }

    pub fn title(&self) -> Style {
        Style::default()
            .fg(self.theme.title)
            .add_modifier(Modifier::BOLD)
    }

    pub fn header(&self) -> Style {
        Style::default()
            .fg(self.theme.header)
            .add_modifier(Modifier::BOLD)
    }

    pub fn selected(&self) -> Style {
        let s = Style::default()
            .fg(self.theme.selected_fg)
            .bg(self.theme.selected_bg)
            .add_modifier(Modifier::BOLD);
        if self.monochrome() {
            s.add_modifier(Modifier::REVERSED)
        } else {
            s
        }
    }

    pub fn tab(&self, active: bool) -> Style {
        if active {
            Style::default()
                .fg(self.theme.tab_active)
                .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
        } else {
            Style::default().fg(self.theme.tab_inactive)
        }
    }

    pub fn ok(&self) -> Style {
        Style::default().fg(self.theme.ok)
    }

    pub fn warn(&self) -> Style {
        Style::default()
            .fg(self.theme.warn)
            .add_modifier(Modifier::BOLD)
    }

    pub fn error(&self) -> Style {
        Style::default()
            .fg(self.theme.error)
            .add_modifier(Modifier::BOLD)
    }

    pub fn util(&self) -> Style {
        Style::default().fg(self.theme.graph_util)
    }

    pub fn memory(&self) -> Style {
        Style::default().fg(self.theme.graph_mem)
    }

    pub fn power(&self) -> Style {
        Style::default().fg(self.theme.graph_power)
    }

    pub fn gauge_bg(&self) -> Style {
        Style::default().fg(self.theme.gauge_bg)
    }

    /// Green, yellow, red by how close a value is to its limit.
    pub fn level(&self, fraction: f64) -> Style {
        if fraction >= 0.9 {
            self.error()
        } else if fraction >= 0.75 {
            self.warn()
        } else {
            self.ok()
        }
    }
}

/// A horizontal bar of `width` cells filled to `fraction`, with eighth-cell precision.
pub fn bar(fraction: f64, width: usize) -> (String, String) {
    const PARTS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let fraction = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let eighths = (fraction * width as f64 * 8.0).round() as usize;
    let full = eighths / 8;
    let mut filled: String = "█".repeat(full);
    if full < width {
        let part = PARTS[eighths % 8];
        if part != ' ' {
            filled.push(part);
        }
    }
    let used = filled.chars().count();
    (filled, "·".repeat(width.saturating_sub(used)))
}

/// A one-line sparkline of the last `width` values scaled to `max`.
pub fn sparkline(values: impl Iterator<Item = Option<f32>>, max: f32, width: usize) -> String {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let vals: Vec<Option<f32>> = values.collect();
    let start = vals.len().saturating_sub(width);
    let mut out: String = " ".repeat(width.saturating_sub(vals.len() - start));
    for v in &vals[start..] {
        out.push(match v {
            Some(v) if max > 0.0 => {
                let idx = ((v / max).clamp(0.0, 1.0) * 7.0).round() as usize;
                LEVELS[idx]
            }
            _ => ' ',
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_fill_to_the_fraction() {
        assert_eq!(bar(0.5, 4), ("██".to_string(), "··".to_string()));
        assert_eq!(bar(1.0, 3).0, "███");
        assert_eq!(bar(f64::NAN, 2).1, "··");
    }

    #[test]
    fn sparkline_is_right_aligned() {
        let s = sparkline([Some(0.0), Some(100.0)].into_iter(), 100.0, 4);
        assert_eq!(s, "  ▁█");
    }
}
