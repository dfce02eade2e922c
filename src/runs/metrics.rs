//! Per-second GPU metrics of a run: rows, their CSV form, a crash-safe writer and a reader.
