//! Run summaries and alerts computed from recorded GPU metrics.
