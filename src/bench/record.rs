//! One row of a benchmark sweep's CSV (`snowsim bench`), and reading and writing such files
//! (`snowsim plot` reads them back). The columns are the fields of [`Row`], in order; the first
//! is the schema version, so that a reader can refuse a file it does not understand.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::input::InputError;

/// The version of the columns below. Bump it when a column changes meaning or moves.
/// Version 2 added `device_index`, `device_uuid` and `device_pci_bus`; version 3 made the
/// device columns `;`-lists for a run split across devices and added `wind_device`,
/// `wind_device_index`, `wind_every` and `snow_shares`. Files of versions 1 and 2 are still read
/// (the columns they lack empty).
pub const SCHEMA_VERSION: u32 = 3;

/// The oldest schema version this snowsim reads.
pub const OLDEST_SCHEMA: u32 = 1;

/// What one configuration of a sweep did, averaged over its repeats.
///
/// Times are milliseconds per frame, the mean over the measured frames of every repeat (warm-up
/// frames left out). A configuration that failed has `status` other than `ok`, the reason in
/// `error`, and no times.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema: u32,
    /// When the configuration ran, RFC 3339 in UTC.
    pub date: String,
    /// `CARGO_PKG_VERSION` of the snowsim that ran it.
    pub snowsim_version: String,
    /// The git commit it was built from (`unknown` outside a checkout).
    pub git_commit: String,
    /// The OpenCL device's name; for a run whose parcels are split across devices
    /// (`--snow-devices`), their names as a `;`-list, the snow's own device first.
    pub device: String,
    /// Its platform's name.
    pub platform: String,
    /// CPU, GPU, accelerator.
    pub device_type: String,
    /// `CL_DRIVER_VERSION`.
    pub driver_version: String,
    /// `CL_DEVICE_VERSION`.
    pub opencl_version: String,
    /// Compute units.
    pub compute_units: u32,
    /// `CL_DEVICE_MAX_CLOCK_FREQUENCY` in MHz where the driver reports it.
    pub clock_mhz: Option<u32>,
    /// The device's index in `snowsim devices` (empty in files of schema 1): two devices of
    /// one name are told apart by it. A split run lists every device's, as `device` does
    /// (written `0;1`).
    #[serde(default, with = "index_list")]
    pub device_index: Vec<usize>,
    /// The device's UUID where the driver reports it (`cl_khr_device_uuid`), else empty; a
    /// `;`-list for a split run.
    #[serde(default)]
    pub device_uuid: String,
    /// The device's PCI address where the driver reports it (`cl_khr_pci_bus_info`), else
    /// empty; a `;`-list for a split run.
    #[serde(default)]
    pub device_pci_bus: String,
    /// The scene file.
    pub scene: String,
    /// Snow particles.
    pub particles: u64,
    /// Tetrahedra of the wind's mesh asked for (`None`: the scene's own).
    pub tets: Option<u64>,
    /// Frame width and height in pixels.
    pub width: u32,
    /// See `width`.
    pub height: u32,
    /// Whether frames were drawn (`--render on`) or only simulated.
    pub render: bool,
    /// `--interop` as asked.
    pub interop_requested: String,
    /// The interop path actually used (empty without rendering or on failure).
    pub interop: String,
    /// `--particle-render` as asked.
    pub particle_render_requested: String,
    /// How particles were actually drawn (empty without rendering or on failure).
    pub particle_render: String,
    /// `--sort`: off, full or partial (empty: the scene's).
    pub sort: String,
    /// What was simulated: `wind+snow`, `wind` or `snow`.
    pub simulate: String,
    /// The wind solver's own device (`--wind-device`) as `INDEX NAME`; empty when the wind
    /// runs on the snow's device (and in files before schema 3).
    #[serde(default)]
    pub wind_device: String,
    /// The index of [`Row::wind_device`] in `snowsim devices`.
    #[serde(default)]
    pub wind_device_index: Option<usize>,
    /// `--wind-every`: a wind step every K frames (empty: the scene's own).
    #[serde(default)]
    pub wind_every: Option<u32>,
    /// The parcels each device of a split run held (`snowsim run --json`'s `snow_devices`), as
    /// a `;`-list in the order of `device`; empty when the parcels are not split.
    #[serde(default)]
    pub snow_shares: String,
    /// Measured frames per repeat.
    pub frames: u32,
    /// Warm-up frames per repeat, left out of every time.
    pub warmup: u32,
    /// Repeats that ran (each in a process of its own).
    pub repeats: u32,
    /// `ok`, `error` (the process failed), `timeout` or `killed` (by a signal).
    pub status: String,
    /// Why it failed (empty when ok).
    pub error: String,
    /// Frames per second: mean over the repeats.
    pub fps_mean: Option<f64>,
    /// Frames per second: standard deviation over the repeats (0 with one repeat).
    pub fps_std: Option<f64>,
    /// Whole frame.
    pub ms_frame: Option<f64>,
    /// The wind solver's kernels (stages `wind.*`), device time.
    pub ms_wind: Option<f64>,
    /// The snow step (`snow.step`: motion, location, landing and deposit in one kernel; with
    /// `snow.particles`, the particles' start), device time.
    pub ms_snow: Option<f64>,
    /// Sorting and permuting the particles (`sort.*`), device time.
    pub ms_sort: Option<f64>,
    /// The snow cover's smoothing (`snow.cover`) and its depths written for the drawing
    /// (`snow.depth`), device time.
    pub ms_smoothing: Option<f64>,
    /// Splatting (`splat`), device time.
    pub ms_splat: Option<f64>,
    /// Handing buffers to OpenGL (`interop.transfer`), host time.
    pub ms_transfer: Option<f64>,
    /// Enqueuing the drawing (`render.draw`), host time.
    pub ms_draw: Option<f64>,
}

/// The stage columns of [`Row`] and the stage-name prefixes each sums, in the order a stacked
/// bar draws them.
pub const STAGE_COLUMNS: [(&str, &[&str]); 8] = [
    ("wind", &["wind."]),
    ("snow", &["snow.step", "snow.particles"]),
    ("sort", &["sort."]),
    ("smoothing", &["snow.cover", "snow.depth"]),
    ("splat", &["splat"]),
    ("transfer", &["interop.transfer"]),
    ("draw", &["render.draw"]),
    ("frame", &[]),
];

impl Row {
    /// The stage columns as (name, value), in [`STAGE_COLUMNS`] order.
    pub fn stage_times(&self) -> [(&'static str, Option<f64>); 8] {
        [
            ("wind", self.ms_wind),
            ("snow", self.ms_snow),
            ("sort", self.ms_sort),
            ("smoothing", self.ms_smoothing),
            ("splat", self.ms_splat),
            ("transfer", self.ms_transfer),
            ("draw", self.ms_draw),
            ("frame", self.ms_frame),
        ]
    }

    /// Fills the stage columns from `snowsim run --json`'s `stages` list (each with `stage` and
    /// `busy_ms`, per measured frame), summing the stages of each column's prefixes; a column
    /// with no matching stage stays `None`.
    pub fn set_stages(&mut self, stages: &[(String, f64)]) {
        let sum = |prefixes: &[&str]| -> Option<f64> {
            let matching: Vec<f64> = stages
                .iter()
                .filter(|(name, _)| prefixes.iter().any(|p| name.starts_with(p)))
                .map(|(_, ms)| *ms)
                .collect();
            (!matching.is_empty()).then(|| matching.iter().sum())
        };
        self.ms_wind = sum(STAGE_COLUMNS[0].1);
        self.ms_snow = sum(STAGE_COLUMNS[1].1);
        self.ms_sort = sum(STAGE_COLUMNS[2].1);
        self.ms_smoothing = sum(STAGE_COLUMNS[3].1);
        self.ms_splat = sum(STAGE_COLUMNS[4].1);
        self.ms_transfer = sum(STAGE_COLUMNS[5].1);
        self.ms_draw = sum(STAGE_COLUMNS[6].1);
    }
}

impl Row {
    /// Whether the run used more than one device: its parcels split (`;` in `device_index`)
    /// or the wind on a device of its own.
    pub fn several_devices(&self) -> bool {
        self.device_index.len() > 1 || !self.wind_device.is_empty()
    }

    /// The device names, compactly: `NAME` for one device, `NAME ×N` for N devices of one
    /// name, else the names joined by ` + `.
    pub fn device_names(&self) -> String {
        let names: Vec<&str> = self.device.split(';').collect();
        match names.as_slice() {
            [one] => (*one).to_string(),
            [first, rest @ ..] if rest.iter().all(|n| n == first) => {
                format!("{first} ×{}", names.len())
            }
            _ => names.join(" + "),
        }
    }

    /// The setup beyond one device, compactly (`snowsim bench`'s table, the plots' summary):
    /// `snow 0+1` for the parcels split over devices 0 and 1, `shares 2500+2500` their parcels,
    /// `wind 2` for the wind on device 2, `wind every 4`; `one device` when none applies.
    pub fn setup(&self) -> String {
        let mut parts = Vec::new();
        if self.device_index.len() > 1 {
            let indices: Vec<String> = self.device_index.iter().map(usize::to_string).collect();
            parts.push(format!("snow {}", indices.join("+")));
        }
        if !self.snow_shares.is_empty() {
            parts.push(format!("shares {}", self.snow_shares.replace(';', "+")));
        }
        if !self.wind_device.is_empty() {
            match self.wind_device_index {
                Some(i) => parts.push(format!("wind {i}")),
                None => parts.push(format!("wind {}", self.wind_device)),
            }
        }
        if let Some(k) = self.wind_every {
            parts.push(format!("wind every {k}"));
        }
        if parts.is_empty() {
            "one device".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// `device_index` as a `;`-list of indices (`0`, `0;1`, empty for none).
mod index_list {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `indices` as `0;1`.
    pub fn serialize<S: Serializer>(indices: &[usize], serializer: S) -> Result<S::Ok, S::Error> {
        let text: Vec<String> = indices.iter().map(usize::to_string).collect();
        serializer.serialize_str(&text.join(";"))
    }

    /// Reads `0;1` (or a lone index, or nothing), refusing anything else.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<usize>, D::Error> {
        let text = String::deserialize(deserializer)?;
        let text = text.trim();
        if text.is_empty() {
            return Ok(Vec::new());
        }
        text.split(';')
            .map(|i| {
                i.trim().parse::<usize>().map_err(|_| {
                    serde::de::Error::custom(format!(
                        "device_index {text:?}: device indices separated by ';' expected"
                    ))
                })
            })
            .collect()
    }
}

/// The longest field of a sweep CSV, in bytes (a path's limit, `PATH_MAX`): readers refuse a
/// longer one, naming its line and column, and [`write_rows`] shortens longer text (a child's
/// error line) to it, so that every CSV it writes can be read back.
pub const TEXT_FIELD_LIMIT: usize = 4096;

impl Row {
    /// The text columns, to shorten ([`Row::clamp_text`]).
    fn texts_mut(&mut self) -> [&mut String; 21] {
        [
            &mut self.date,
            &mut self.snowsim_version,
            &mut self.git_commit,
            &mut self.device,
            &mut self.device_uuid,
            &mut self.device_pci_bus,
            &mut self.wind_device,
            &mut self.snow_shares,
            &mut self.platform,
            &mut self.device_type,
            &mut self.driver_version,
            &mut self.opencl_version,
            &mut self.scene,
            &mut self.interop_requested,
            &mut self.interop,
            &mut self.particle_render_requested,
            &mut self.particle_render,
            &mut self.sort,
            &mut self.simulate,
            &mut self.status,
            &mut self.error,
        ]
    }

    /// Shortens every text column longer than [`TEXT_FIELD_LIMIT`] bytes to that length (at a
    /// character boundary, ending in `…`); whether one was.
    pub fn clamp_text(&mut self) -> bool {
        let mut clamped = false;
        for text in self.texts_mut() {
            if text.len() > TEXT_FIELD_LIMIT {
                let mut end = TEXT_FIELD_LIMIT - '…'.len_utf8();
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
                text.push('…');
                clamped = true;
            }
        }
        clamped
    }
}

/// The most bytes of sweep CSV read (64 MB): about 200 000 rows of `snowsim bench`. `snowsim
/// plot` reads at most this much from all its files together.
pub const CSV_LIMIT: u64 = 64_000_000;

/// Errors reading or writing a sweep's CSV.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file could not be read or written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        error: String,
    },
    /// The file is not a regular file (a FIFO, a device, a directory), cannot be opened, or is
    /// larger than the reader reads ([`crate::input`]).
    #[error(transparent)]
    Input(#[from] InputError),
    /// A row does not parse (line numbers count the header as line 1).
    #[error("{}, line {line}: {error}", path.display())]
    Parse {
        /// The file.
        path: std::path::PathBuf,
        /// The line.
        line: u64,
        /// What is wrong with it.
        error: String,
    },
    /// A field longer than [`TEXT_FIELD_LIMIT`] bytes.
    #[error(
        "{}, line {line}, column {column}: a field of {len} bytes; the fields of a sweep CSV \
         are at most {TEXT_FIELD_LIMIT} bytes",
        path.display()
    )]
    FieldTooLong {
        /// The file.
        path: std::path::PathBuf,
        /// The line the row starts on (1: the header).
        line: u64,
        /// The column's name (its number for a header field).
        column: String,
        /// The field's length in bytes.
        len: usize,
    },
    /// A row of another schema version.
    #[error(
        "{}, line {line}: schema version {found}, this snowsim reads versions {OLDEST_SCHEMA} to {SCHEMA_VERSION}",
        path.display()
    )]
    Schema {
        /// The file.
        path: std::path::PathBuf,
        /// The line.
        line: u64,
        /// The version found.
        found: u32,
    },
}

/// The rows of a sweep's CSV, with where each starts and the columns the file has.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sweep {
    /// The header's column names, in order.
    pub columns: Vec<String>,
    /// The rows, in order.
    pub rows: Vec<Row>,
    /// The line each row starts on (the header is line 1; a quoted field may span lines).
    pub lines: Vec<u64>,
}

impl Sweep {
    /// Whether the file has a column of this name.
    pub fn has_column(&self, name: &str) -> bool {
        self.columns.iter().any(|c| c == name)
    }
}

/// Reads every row of a sweep's CSV, checking the schema version of each. The file is read
/// through [`crate::input::read`]: a FIFO, a device or a directory is refused without being
/// read, and so is a file larger than [`CSV_LIMIT`].
pub fn read_rows(path: &Path) -> Result<Vec<Row>, RecordError> {
    let bytes = crate::input::read(path, CSV_LIMIT)?;
    Ok(parse_rows(path, &bytes)?.rows)
}

/// Reads a sweep's CSV as [`read_rows`] does, with its header's columns.
pub fn read_sweep(path: &Path) -> Result<Sweep, RecordError> {
    let bytes = crate::input::read(path, CSV_LIMIT)?;
    parse_rows(path, &bytes)
}

/// Parses the bytes of a sweep's CSV read from `path` (named in errors), checking the schema
/// version of each row.
pub fn parse_rows(path: &Path, bytes: &[u8]) -> Result<Sweep, RecordError> {
    let parse = |line: u64, error: &dyn std::fmt::Display| RecordError::Parse {
        path: path.to_path_buf(),
        line,
        error: error.to_string(),
    };
    let mut reader = csv::Reader::from_reader(bytes);
    let columns = reader
        .headers()
        .map_err(|e| parse(e.position().map_or(1, |p| p.line()), &e))?
        .iter()
        .map(str::to_string)
        .collect();
    let headers = reader.byte_headers().map_err(|e| parse(1, &e))?.clone();
    let too_long = |line: u64, record: &csv::ByteRecord, names: Option<&csv::ByteRecord>| {
        let (i, field) = record
            .iter()
            .enumerate()
            .find(|(_, f)| f.len() > TEXT_FIELD_LIMIT)?;
        let column = match names.and_then(|n| n.get(i)) {
            Some(name) if name.len() <= TEXT_FIELD_LIMIT => String::from_utf8_lossy(name).into(),
            _ => format!("{}", i + 1),
        };
        Some(RecordError::FieldTooLong {
            path: path.to_path_buf(),
            line,
            column,
            len: field.len(),
        })
    };
    if let Some(error) = too_long(1, &headers, None) {
        return Err(error);
    }
    let mut sweep = Sweep {
        columns,
        ..Sweep::default()
    };
    let mut record = csv::ByteRecord::new();
    loop {
        let line = reader.position().line();
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(parse(e.position().map_or(line, |p| p.line()), &e)),
        }
        let line = record.position().map_or(line, |p| p.line());
        if let Some(error) = too_long(line, &record, Some(&headers)) {
            return Err(error);
        }
        let row: Row = record
            .deserialize(Some(&headers))
            .map_err(|e| parse(line, &e))?;
        if !(OLDEST_SCHEMA..=SCHEMA_VERSION).contains(&row.schema) {
            return Err(RecordError::Schema {
                path: path.to_path_buf(),
                line,
                found: row.schema,
            });
        }
        sweep.rows.push(row);
        sweep.lines.push(line);
    }
    Ok(sweep)
}

/// Writes `rows` as a CSV with a header, atomically (a reader never sees half a file); text
/// longer than [`TEXT_FIELD_LIMIT`] is shortened to it ([`Row::clamp_text`]).
pub fn write_rows(path: &Path, rows: &[Row]) -> Result<(), RecordError> {
    let io = |e: &dyn std::fmt::Display| RecordError::Io {
        path: path.to_path_buf(),
        error: e.to_string(),
    };
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        let mut short = row.clone();
        let row = if short.clamp_text() { &short } else { row };
        writer.serialize(row).map_err(|e| io(&e))?;
    }
    let bytes = writer.into_inner().map_err(|e| io(&e))?;
    crate::output::write_atomic(path, &bytes).map_err(|e| io(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(device: &str, particles: u64, fps: Option<f64>) -> Row {
        Row {
            schema: SCHEMA_VERSION,
            device: device.into(),
            particles,
            status: if fps.is_some() { "ok" } else { "error" }.into(),
            error: if fps.is_some() {
                ""
            } else {
                "out of memory, it said"
            }
            .into(),
            fps_mean: fps,
            fps_std: fps.map(|_| 1.5),
            ..Row::default()
        }
    }

    #[test]
    fn rows_round_trip_through_a_file_with_errors_and_missing_values() {
        let dir = std::env::temp_dir().join(format!("snowsim-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sweep.csv");
        let rows = vec![
            row("H100, \"SXM\"", 1 << 20, Some(325.25)),
            row("pocl", 1 << 22, None),
        ];
        write_rows(&path, &rows).unwrap();
        assert_eq!(read_rows(&path).unwrap(), rows);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("schema,date,"), "{text}");
        let first = format!("\n{SCHEMA_VERSION},");
        std::fs::write(&path, text.replacen(&first, "\n7,", 1)).unwrap();
        let err = read_rows(&path).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("version 7"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_sweep_of_schema_1_reads_without_the_device_columns() {
        // Written before the columns `device_index`, `device_uuid`, `device_pci_bus`.
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("benches/sweeps/h100-machine-devices-valley-2026-11-23.csv");
        let rows = read_rows(&path).unwrap();
        assert!(!rows.is_empty());
        assert!(
            rows.iter()
                .all(|r| r.schema == 1 && r.device_index.is_empty())
        );
        assert!(
            rows.iter()
                .all(|r| r.device_uuid.is_empty() && r.device_pci_bus.is_empty())
        );
    }

    #[test]
    fn long_text_is_shortened_on_writing_and_refused_on_reading() {
        let dir = std::env::temp_dir().join(format!("snowsim-record-long-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sweep.csv");
        let mut long = row("pocl", 1 << 10, None);
        long.error = "é".repeat(TEXT_FIELD_LIMIT);
        write_rows(&path, &[long]).unwrap();
        let back = read_rows(&path).unwrap();
        assert!(back[0].error.len() <= TEXT_FIELD_LIMIT);
        assert!(back[0].error.ends_with('…') && back[0].error.starts_with("éé"));

        let text = std::fs::read_to_string(&path).unwrap();
        let huge = "x".repeat(TEXT_FIELD_LIMIT + 1);
        std::fs::write(&path, text.replacen(",pocl,", &format!(",{huge},"), 1)).unwrap();
        let err = read_rows(&path).unwrap_err().to_string();
        assert!(
            err.contains("line 2, column device")
                && err.contains(&format!("{} bytes", TEXT_FIELD_LIMIT + 1))
                && err.contains(&format!("at most {TEXT_FIELD_LIMIT} bytes")),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn stage_columns_sum_the_stages_of_their_prefixes() {
        let mut r = Row::default();
        let stages: Vec<(String, f64)> = [
            ("wind.advect", 0.25),
            ("wind.pressure", 0.5),
            ("snow.step", 1.0),
            ("sort.local", 0.125),
            ("sort.merge", 0.125),
            ("interop.transfer", 2.0),
            ("render.draw", 3.0),
            ("render.composite", 9.0),
        ]
        .iter()
        .map(|(s, t)| (s.to_string(), *t))
        .collect();
        r.set_stages(&stages);
        assert_eq!(r.ms_wind, Some(0.75));
        assert_eq!(r.ms_snow, Some(1.0));
        assert_eq!(r.ms_sort, Some(0.25));
        assert_eq!(r.ms_smoothing, None);
        assert_eq!(r.ms_splat, None);
        assert_eq!(r.ms_transfer, Some(2.0));
        assert_eq!(r.ms_draw, Some(3.0));
    }

    #[test]
    fn a_split_run_round_trips_its_lists_and_reads_compactly() {
        let dir = std::env::temp_dir().join(format!("snowsim-record-split-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sweep.csv");
        let mut split = row("gpu;gpu", 1 << 12, Some(50.0));
        split.device_index = vec![0, 2];
        split.snow_shares = "2048;2048".into();
        split.wind_device = "1 cpu".into();
        split.wind_device_index = Some(1);
        split.wind_every = Some(2);
        let mut plain = row("gpu", 1 << 12, Some(30.0));
        plain.device_index = vec![3];
        write_rows(&path, &[split.clone(), plain.clone()]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains(",0;2,") && text.contains(",2048;2048,"),
            "{text}"
        );
        assert_eq!(read_rows(&path).unwrap(), [split.clone(), plain.clone()]);
        assert_eq!(split.device_names(), "gpu ×2");
        assert_eq!(
            split.setup(),
            "snow 0+2, shares 2048+2048, wind 1, wind every 2"
        );
        assert!(split.several_devices() && !plain.several_devices());
        assert_eq!(plain.setup(), "one device");
        // An index list that is not one is refused, naming the line.
        std::fs::write(&path, text.replacen(",0;2,", ",0;x,", 1)).unwrap();
        let err = read_rows(&path).unwrap_err().to_string();
        assert!(
            err.contains("line 2") && err.contains("device_index"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
