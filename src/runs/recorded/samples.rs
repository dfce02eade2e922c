//! Per-second GPU samples of a run: the row type, its CSV form, a writer that loses at most the
//! last second on a crash, and a reader that tolerates the torn line a crash leaves.

use std::io::{self, Write};

use serde::Serialize;

use crate::gpu::{GpuSample, GpuStatic};

/// One GPU at one instant, as recorded for a run. `None` is a value NVML could not give.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricsRow {
    pub t_unix_ms: i64,
    pub gpu_index: u32,
    pub gpu_uuid: String,
    pub util_pct: Option<u32>,
    pub mem_used_bytes: Option<u64>,
    pub mem_total_bytes: Option<u64>,
    pub power_w: Option<f64>,
    pub temp_c: Option<u32>,
    pub sm_clock_mhz: Option<u32>,
}

/// The CSV columns, in the order every row is written; new columns will only ever be appended.
/// A missing value is an empty field; `gpu_uuid` is quoted only if it holds a comma or quote.
pub const CSV_HEADER: &str =
    "t_unix_ms,gpu_index,gpu_uuid,util_pct,mem_used_bytes,mem_total_bytes,power_w,temp_c,sm_clock_mhz";

const COLUMNS: [&str; 9] = [
    "t_unix_ms",
    "gpu_index",
    "gpu_uuid",
    "util_pct",
    "mem_used_bytes",
    "mem_total_bytes",
    "power_w",
    "temp_c",
    "sm_clock_mhz",
];

/// Rows for the run's GPUs out of one collector sample. `statics` and `samples` are parallel, in
/// the collector's order; a GPU that fell off the bus gets a row of empty values, so the gap shows.
pub fn rows_from(
    t_unix_ms: i64,
    statics: &[GpuStatic],
    samples: &[GpuSample],
    indices: &[u32],
) -> Vec<MetricsRow> {
    statics
        .iter()
        .zip(samples)
        .filter(|(gpu, _)| indices.contains(&gpu.index))
        .map(|(gpu, sample)| {
            let live = !sample.lost;
            MetricsRow {
                t_unix_ms,
                gpu_index: gpu.index,
                gpu_uuid: gpu.uuid.clone(),
                util_pct: sample.util_gpu_pct.filter(|_| live),
                mem_used_bytes: sample.memory_used_bytes.filter(|_| live),
                mem_total_bytes: gpu.memory_total_bytes,
                power_w: sample.power_w.filter(|p| live && p.is_finite()),
                temp_c: sample.temp_c.filter(|_| live),
                sm_clock_mhz: sample.sm_clock_mhz.filter(|_| live),
            }
        })
        .collect()
}

/// A row as one CSV line, without the line ending.
pub fn csv_line(row: &MetricsRow) -> String {
    fn opt<T: ToString>(value: Option<T>) -> String {
        value.map_or_else(String::new, |v| v.to_string())
    }
    [
        row.t_unix_ms.to_string(),
        row.gpu_index.to_string(),
        quote(&row.gpu_uuid),
        opt(row.util_pct),
        opt(row.mem_used_bytes),
        opt(row.mem_total_bytes),
        opt(row.power_w.filter(|p| p.is_finite())),
        opt(row.temp_c),
        opt(row.sm_clock_mhz),
    ]
    .join(",")
}

fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!(
            "\"{}\"",
            field.replace('"', "\"\"").replace(['\n', '\r'], " ")
        )
    } else {
        field.to_string()
    }
}

/// Appends rows to a metrics file. Each batch (one sample of all the run's GPUs) goes out in a
/// single write and flush, so a crash loses at most the batch being written and leaves at most one
/// torn line, which [`read_csv`] drops.
#[derive(Debug)]
pub struct MetricsWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
}

impl<W: Write> MetricsWriter<W> {
    /// Starts a new file: writes the header.
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(CSV_HEADER.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()?;
        Ok(Self::resume(out))
    }

    /// Continues an existing file after a restart. Truncate it to [`complete_len`] first, so the
    /// next row does not join a torn one.
    pub fn resume(out: W) -> Self {
        Self {
            out,
            buf: Vec::new(),
        }
    }

    pub fn write_batch(&mut self, rows: &[MetricsRow]) -> io::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.buf.clear();
        for row in rows {
            self.buf.extend_from_slice(csv_line(row).as_bytes());
            self.buf.push(b'\n');
        }
        self.out.write_all(&self.buf)?;
        self.out.flush()
    }

    pub fn get_ref(&self) -> &W {
        &self.out
    }

    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// The length of the complete lines at the start of a metrics file: where to truncate it before
/// appending after a crash.
pub fn complete_len(bytes: &[u8]) -> usize {
    bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MetricsError {
    #[error("the metrics file has no header line; it is empty or not a gpudeck metrics CSV")]
    MissingHeader,
    #[error("the metrics file has no `{0}` column; it is not a gpudeck metrics CSV")]
    MissingColumn(&'static str),
    #[error("metrics line {line}, column `{column}`: {reason}")]
    BadValue {
        line: usize,
        column: &'static str,
        reason: String,
    },
}

/// Reads a metrics CSV. Columns are found by their header name, so files from later versions with
/// more columns still read. A last line without its newline is the torn write of a crash: dropped.
pub fn read_csv(text: &str) -> Result<Vec<MetricsRow>, MetricsError> {
    let complete = &text[..complete_len(text.as_bytes())];
    let mut lines = complete.lines();
    let header = lines.next().ok_or(MetricsError::MissingHeader)?;
    let mut reader = RowReader::from_header(header)?;
    lines.filter_map(|line| reader.row(line)).collect()
}

/// A metrics file read leniently: its rows, and the lines inside it that were not rows (an
/// edit, a disk error) and were skipped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricsRead {
    pub rows: Vec<MetricsRow>,
    pub skipped: SkippedLines,
}

/// Lines of a metrics file that were not rows, skipped and counted (a torn last line is not
/// counted: every crash leaves one).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SkippedLines {
    pub count: u64,
    /// Why the first one was skipped.
    pub first: Option<String>,
}

impl SkippedLines {
    pub fn add(&mut self, why: &MetricsError) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(why.to_string());
        }
    }

    /// "metrics.csv: 2 bad lines skipped (the first: metrics line 5, column ...)", or None when
    /// every line was a row. The CLI and the Runs tab say it in these words.
    pub fn describe(&self, file: &str) -> Option<String> {
        (self.count > 0).then(|| {
            format!(
                "{file}: {} bad line{} skipped (the first: {})",
                self.count,
                if self.count == 1 { "" } else { "s" },
                self.first.as_deref().unwrap_or("unknown")
            )
        })
    }
}

/// Reads a metrics CSV as [`read_csv`] does, but skips and counts a line that is not a row
/// instead of refusing the whole file; a file without a usable header is still an error.
pub fn read_csv_skipping(text: &str) -> Result<MetricsRead, MetricsError> {
    let complete = &text[..complete_len(text.as_bytes())];
    let mut lines = complete.lines();
    let header = lines.next().ok_or(MetricsError::MissingHeader)?;
    let mut reader = RowReader::from_header(header)?;
    let mut read = MetricsRead::default();
    for row in lines.filter_map(|line| reader.row(line)) {
        match row {
            Ok(row) => read.rows.push(row),
            Err(e) => read.skipped.add(&e),
        }
    }
    Ok(read)
}

/// Reads rows one line at a time, as a file that is still being written is followed: the header
/// says where each column is, then each line is a row.
#[derive(Clone, Debug)]
pub struct RowReader {
    at: [usize; COLUMNS.len()],
    line: usize,
}

impl RowReader {
    pub fn from_header(header: &str) -> Result<Self, MetricsError> {
        let names = split_fields(header.trim_end_matches('\r'));
        let mut at = [0usize; COLUMNS.len()];
        for (slot, column) in at.iter_mut().zip(COLUMNS) {
            *slot = names
                .iter()
                .position(|n| n == column)
                .ok_or(MetricsError::MissingColumn(column))?;
        }
        Ok(Self { at, line: 1 })
    }

    /// The row on the next line; None for a blank line.
    pub fn row(&mut self, line: &str) -> Option<Result<MetricsRow, MetricsError>> {
        self.line += 1;
        if line.trim().is_empty() {
            return None;
        }
        let fields = split_fields(line.trim_end_matches('\r'));
        Some(parse_row(self.line, &fields, &self.at))
    }
}

fn parse_row(line: usize, fields: &[String], at: &[usize; 9]) -> Result<MetricsRow, MetricsError> {
    let field = |k: usize| fields.get(at[k]).map_or("", |f| f.trim());
    let bad = |k: usize, reason: String| MetricsError::BadValue {
        line,
        column: COLUMNS[k],
        reason,
    };
    let required = |k: usize| -> Result<&str, MetricsError> {
        Some(field(k))
            .filter(|f| !f.is_empty())
            .ok_or_else(|| bad(k, "missing".into()))
    };
    fn opt<T: std::str::FromStr>(raw: &str) -> Result<Option<T>, String>
    where
        T::Err: std::fmt::Display,
    {
        if raw.is_empty() {
            return Ok(None);
        }
        raw.parse().map(Some).map_err(|e| format!("{raw:?}: {e}"))
    }
    Ok(MetricsRow {
        t_unix_ms: required(0)?.parse().map_err(|e| bad(0, format!("{e}")))?,
        gpu_index: required(1)?.parse().map_err(|e| bad(1, format!("{e}")))?,
        gpu_uuid: field(2).to_string(),
        util_pct: opt(field(3)).map_err(|e| bad(3, e))?,
        mem_used_bytes: opt(field(4)).map_err(|e| bad(4, e))?,
        mem_total_bytes: opt(field(5)).map_err(|e| bad(5, e))?,
        power_w: opt(field(6)).map_err(|e| bad(6, e))?,
        temp_c: opt(field(7)).map_err(|e| bad(7, e))?,
        sm_clock_mhz: opt(field(8)).map_err(|e| bad(8, e))?,
    })
}

/// Splits a CSV line, honouring double quotes (`""` inside quotes is one quote).
fn split_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let current = fields.last_mut();
        match (c, quoted, current) {
            ('"', true, Some(f)) if chars.peek() == Some(&'"') => {
                chars.next();
                f.push('"');
            }
            ('"', _, _) => quoted = !quoted,
            (',', false, _) => fields.push(String::new()),
            (c, _, Some(f)) => f.push(c),
            (_, _, None) => {}
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    //! Tests of metrics rows, their CSV form, the batch writer and the crash-tolerant reader.

    use super::*;

    fn gpu(index: u32, total: Option<u64>) -> GpuStatic {
        GpuStatic {
            index,
            name: "NVIDIA H100 80GB HBM3".into(),
            uuid: format!("GPU-0000000{index}-aaaa-bbbb-cccc-ddddeeeeffff"),
            pci_bus_id: format!("00000000:0{index}:00.0"),
            compute_capability: Some("9.0".into()),
            architecture: Some("Hopper".into()),
            memory_total_bytes: total,
            ..Default::default()
        }
    }

    fn sample(util: u32, used: u64, power: f64) -> GpuSample {
        GpuSample {
            util_gpu_pct: Some(util),
            memory_used_bytes: Some(used),
            power_w: Some(power),
            temp_c: Some(61),
            sm_clock_mhz: Some(1980),
            ..GpuSample::default()
        }
    }

    fn row(t: i64, index: u32) -> MetricsRow {
        MetricsRow {
            t_unix_ms: t,
            gpu_index: index,
            gpu_uuid: format!("GPU-{index}"),
            util_pct: Some(97),
            mem_used_bytes: Some(71_000_000_000),
            mem_total_bytes: Some(85_520_809_984),
            power_w: Some(612.345),
            temp_c: Some(64),
            sm_clock_mhz: Some(1980),
        }
    }

    #[test]
    fn rows_cover_only_the_runs_gpus_and_blank_a_lost_one() {
        let statics = [gpu(0, Some(80)), gpu(1, Some(80)), gpu(2, None)];
        let samples = [
            sample(90, 10, 300.5),
            sample(5, 20, 100.0),
            GpuSample::lost(),
        ];
        let rows = rows_from(1_700_000_000_000, &statics, &samples, &[2, 0]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].gpu_index, 0);
        assert_eq!(rows[0].gpu_uuid, statics[0].uuid);
        assert_eq!(
            (
                rows[0].util_pct,
                rows[0].mem_used_bytes,
                rows[0].mem_total_bytes,
                rows[0].power_w
            ),
            (Some(90), Some(10), Some(80), Some(300.5))
        );
        assert_eq!(rows[1].gpu_index, 2);
        assert_eq!(
            (rows[1].util_pct, rows[1].power_w, rows[1].temp_c),
            (None, None, None)
        );
    }

    #[test]
    fn csv_line_keeps_the_column_order_and_blanks_missing_values() {
        let mut r = row(1_700_000_000_123, 3);
        assert_eq!(
            csv_line(&r),
            "1700000000123,3,GPU-3,97,71000000000,85520809984,612.345,64,1980"
        );
        assert_eq!(CSV_HEADER.split(',').collect::<Vec<_>>(), COLUMNS);
        r.util_pct = None;
        r.power_w = Some(f64::NAN);
        r.sm_clock_mhz = None;
        assert_eq!(
            csv_line(&r),
            "1700000000123,3,GPU-3,,71000000000,85520809984,,64,"
        );
        r.gpu_uuid = "odd,\"uuid\"".into();
        assert!(csv_line(&r).contains(",\"odd,\"\"uuid\"\"\","));
    }

    #[test]
    fn written_rows_read_back_equal() {
        let mut rows = vec![row(1000, 0), row(1000, 1), row(2000, 0), row(2000, 1)];
        rows[1].util_pct = None;
        rows[2].power_w = None;
        rows[3].gpu_uuid = "with, comma and \"quote\"".into();
        let mut writer = MetricsWriter::new(Vec::new()).expect("header");
        writer.write_batch(&rows[..2]).expect("batch 1");
        writer.write_batch(&rows[2..]).expect("batch 2");
        let text = String::from_utf8(writer.into_inner()).expect("utf-8");
        assert!(text.starts_with(CSV_HEADER));
        assert_eq!(read_csv(&text), Ok(rows));
    }

    /// A writer that counts flushes and writes, like the file and syscalls behind it.
    #[derive(Default)]
    struct Counting {
        bytes: Vec<u8>,
        writes: usize,
        flushes: usize,
    }

    impl Write for Counting {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.writes += 1;
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            self.flushes += 1;
            Ok(())
        }
    }

    #[test]
    fn each_batch_is_one_write_and_one_flush() {
        let mut writer = MetricsWriter::resume(Counting::default());
        let batch: Vec<MetricsRow> = (0..8).map(|i| row(5000, i)).collect();
        writer.write_batch(&batch).expect("batch");
        writer.write_batch(&[]).expect("nothing");
        let out = writer.get_ref();
        assert_eq!((out.writes, out.flushes), (1, 1));
        assert_eq!(out.bytes.iter().filter(|&&b| b == b'\n').count(), 8);
    }

    #[test]
    fn a_torn_last_line_is_dropped() {
        let full = format!(
            "{CSV_HEADER}\n{}\n{}\n",
            csv_line(&row(1000, 0)),
            csv_line(&row(2000, 0))
        );
        for cut in 1..csv_line(&row(2000, 0)).len() {
            let torn = &full[..full.len() - 1 - cut];
            let rows = read_csv(torn).expect("torn file reads");
            assert_eq!(rows, [row(1000, 0)], "cut {cut}");
            assert_eq!(
                complete_len(torn.as_bytes()),
                full.len() - csv_line(&row(2000, 0)).len() - 1
            );
        }
        assert_eq!(read_csv(&full).map(|r| r.len()), Ok(2));
    }

    #[test]
    fn columns_are_found_by_name_and_crlf_is_tolerated() {
        let text = "gpu_index,t_unix_ms,extra,gpu_uuid,util_pct,mem_used_bytes,mem_total_bytes,power_w,temp_c,sm_clock_mhz\r\n\
                1,500,x,GPU-1,0,,,,,\r\n\r\n";
        let rows = read_csv(text).expect("reads");
        assert_eq!(
            (rows[0].gpu_index, rows[0].t_unix_ms, rows[0].util_pct),
            (1, 500, Some(0))
        );
    }

    #[test]
    fn malformed_files_say_what_is_wrong() {
        assert_eq!(read_csv(""), Err(MetricsError::MissingHeader));
        assert_eq!(
            read_csv("a,b\n"),
            Err(MetricsError::MissingColumn("t_unix_ms"))
        );
        let bad = format!("{CSV_HEADER}\n1000,0,GPU-0,ninety,,,,,\n");
        let err = read_csv(&bad).expect_err("bad value");
        assert!(
            matches!(
                err,
                MetricsError::BadValue {
                    line: 2,
                    column: "util_pct",
                    ..
                }
            ),
            "{err}"
        );
        let missing = format!("{CSV_HEADER}\n,0,GPU-0,,,,,,\n");
        assert!(matches!(
            read_csv(&missing),
            Err(MetricsError::BadValue {
                column: "t_unix_ms",
                ..
            })
        ));
    }
}
