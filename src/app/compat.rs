//! The Compatibility tab's state: the board of verdicts, rebuilt when the driver, the engine or the image list changes.

use std::sync::Arc;

use super::filter::ListFilter;
use crate::compat::{Assessment, Board, CompatData};

/// The verdicts on screen and which row is selected.
#[derive(Clone, Debug, Default)]
pub struct CompatView {
    pub data: Arc<CompatData>,
    pub board: Option<Board>,
    /// An index into the board's images (one the filter shows, unless it shows none).
    pub selected: usize,
    pub filter: ListFilter,
}

impl CompatView {
    pub fn new(data: CompatData) -> Self {
        Self {
            data: Arc::new(data),
            board: None,
            selected: 0,
            filter: ListFilter::default(),
        }
    }

    /// The selected verdict; none while the filter hides every row.
    pub fn selected_assessment(&self) -> Option<&Assessment> {
        self.selected_shown()?;
        self.board.as_ref()?.images.get(self.selected)
    }

    /// The verdicts the filter keeps, as indices into the board's images.
    pub fn shown(&self) -> Vec<usize> {
        match &self.board {
            Some(board) => self.filter.keep(&board.images, assessment_text),
            None => Vec::new(),
        }
    }

    /// The selected verdict's place among the shown rows.
    pub fn selected_shown(&self) -> Option<usize> {
        self.shown().iter().position(|&i| i == self.selected)
    }

    /// Moves the selection to the first shown row when the filter hid it.
    pub fn keep_selection(&mut self) {
        if self.selected_shown().is_none() {
            if let Some(&first) = self.shown().first() {
                self.selected = first;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.board.as_ref().map_or(0, |b| b.images.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The verdict shown for a reference (for the pull picker).
    pub fn assessment_of(&self, reference: &str) -> Option<&Assessment> {
        self.board
            .as_ref()?
            .images
            .iter()
            .find(|a| a.image.reference == reference)
    }
}

/// A verdict's text as its row shows it, for the filter.
pub fn assessment_text(a: &Assessment) -> String {
    format!(
        "{} {} {} {} {}",
        a.verdict.image_level.word(),
        a.image.reference,
        a.image.source.label(),
        a.image.framework_label().unwrap_or_default(),
        a.image.cuda.map(|c| c.to_string()).unwrap_or_default()
    )
}
