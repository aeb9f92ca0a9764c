//! `snowsim devices`: one row per OpenCL device.

use std::process::ExitCode;

use snowsim::cl::{self, DeviceInfo};

use super::console::{self, outln};

/// Options of `snowsim devices`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print a JSON array of objects instead of a table (with each device's `uuid` and
    /// `pci_bus` where the driver reports them: what tells two devices of one name apart, and
    /// `egl_device`, the EGL device that is the same GPU: headless drawing opens it).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let devices: Vec<DeviceInfo> = cl::list_devices()?.into_iter().map(|d| d.info).collect();
    let egl = snowsim::render::egl_devices::list();
    let rows: Vec<Listed> = devices
        .iter()
        .map(|info| Listed {
            info,
            egl_device: snowsim::render::egl_devices::matching(info, &egl),
        })
        .collect();
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&rows)?)?;
    } else {
        console::out(format_args!("{}", table(&rows)))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A device as listed: what OpenCL says of it and the EGL device that is the same GPU (the
/// one headless drawing opens for it), if any.
#[derive(serde::Serialize)]
struct Listed<'a> {
    #[serde(flatten)]
    info: &'a DeviceInfo,
    /// Its index in `eglQueryDevicesEXT`'s list (`SNOWSIM_EGL_DEVICE`), matched by UUID or PCI
    /// address.
    egl_device: Option<usize>,
}

/// The devices as an aligned text table.
fn table(devices: &[Listed]) -> String {
    let header = [
        "#",
        "platform",
        "device",
        "type",
        "OpenCL",
        "CUs",
        "memory",
        "max WG",
        "fp64",
        "GL sharing",
        "PCI bus",
        "EGL",
    ];
    let rows: Vec<[String; 12]> = devices
        .iter()
        .map(|listed| {
            let d = listed.info;
            [
                d.index.to_string(),
                d.platform.clone(),
                d.name.clone(),
                d.device_type.to_string(),
                d.version.clone(),
                d.compute_units.to_string(),
                format!("{:.1} GiB", d.global_mem_bytes as f64 / (1u64 << 30) as f64),
                d.max_work_group_size.to_string(),
                yes_no(d.fp64).to_string(),
                yes_no(d.gl_sharing).to_string(),
                d.pci_bus.clone().unwrap_or_else(|| "-".into()),
                listed
                    .egl_device
                    .map_or_else(|| "-".into(), |i| i.to_string()),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(header.to_vec());
    for row in &rows {
        out += &line(row.iter().map(String::as_str).collect());
    }
    out
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}
