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
        temp_slowdown_c: None,
        temp_shutdown_c: None,
        sm_clock_max_mhz: None,
        mem_clock_max_mhz: None,
        pcie_gen_max: None,
        pcie_width_max: None,
        fan_count: None,
        ecc_enabled: None,
        mig_enabled: None,
        persistence_mode: None,
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
