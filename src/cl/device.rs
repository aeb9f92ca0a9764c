//! Enumerating OpenCL devices and choosing one from a user's `--device` selector.

use std::fmt;
use std::str::FromStr;

use opencl3::device::{
    CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_CUSTOM,
    CL_DEVICE_TYPE_GPU, Device as ClDevice,
};
use opencl3::error_codes::{CL_DEVICE_NOT_FOUND, DLOPEN_RUNTIME_LOAD_FAILED};
use opencl3::platform::{Platform, get_platforms};
use serde::Serialize;

use super::error::{Error, Result, ResultExt};

/// Kind of device as OpenCL reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceType {
    /// A graphics processor.
    Gpu,
    /// The host processor (e.g. PoCL's pthread device).
    Cpu,
    /// A dedicated accelerator.
    Accelerator,
    /// A custom device without full OpenCL C support.
    Custom,
    /// Anything else.
    Other,
}

impl DeviceType {
    fn from_bits(bits: u64) -> Self {
        if bits & CL_DEVICE_TYPE_GPU != 0 {
            Self::Gpu
        } else if bits & CL_DEVICE_TYPE_CPU != 0 {
            Self::Cpu
        } else if bits & CL_DEVICE_TYPE_ACCELERATOR != 0 {
            Self::Accelerator
        } else if bits & CL_DEVICE_TYPE_CUSTOM != 0 {
            Self::Custom
        } else {
            Self::Other
        }
    }
}

impl fmt::Display for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Gpu => "GPU",
            Self::Cpu => "CPU",
            Self::Accelerator => "accelerator",
            Self::Custom => "custom",
            Self::Other => "other",
        })
    }
}

/// What snowsim needs to know about one OpenCL device, as `snowsim devices` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceInfo {
    /// Position in the list of all devices of all platforms; what `--device N` selects.
    pub index: usize,
    /// Platform name, e.g. `NVIDIA CUDA` or `Portable Computing Language`.
    pub platform: String,
    /// Device name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Vendor string.
    pub vendor: String,
    /// GPU, CPU, accelerator, …
    #[serde(rename = "type")]
    pub device_type: DeviceType,
    /// Device OpenCL version string, e.g. `OpenCL 3.0 CUDA`.
    pub version: String,
    /// OpenCL C version the compiler accepts.
    pub opencl_c_version: String,
    /// Driver version string.
    pub driver_version: String,
    /// Number of compute units (SMs, cores).
    pub compute_units: u32,
    /// `CL_DEVICE_MAX_CLOCK_FREQUENCY` in MHz (`None` where the driver reports 0 or fails).
    pub max_clock_mhz: Option<u32>,
    /// Global memory size in bytes.
    pub global_mem_bytes: u64,
    /// Largest single buffer allocation in bytes.
    pub max_alloc_bytes: u64,
    /// Local (shared) memory per work-group in bytes.
    pub local_mem_bytes: u64,
    /// Largest work-group size.
    pub max_work_group_size: usize,
    /// Whether double precision (`cl_khr_fp64`) is available.
    pub fp64: bool,
    /// Whether OpenCL–OpenGL buffer sharing (`cl_khr_gl_sharing`) is offered.
    pub gl_sharing: bool,
    /// The device's UUID (`cl_khr_device_uuid`), as `8-4-4-4-12` hex digits: what tells two
    /// devices of the same name apart across APIs (Vulkan, EGL); `None` without the extension.
    pub uuid: Option<String>,
    /// The device's PCI address (`cl_khr_pci_bus_info`), `domain:bus:device.function` in hex;
    /// `None` without the extension (a CPU device).
    pub pci_bus: Option<String>,
    /// Full extension list.
    #[serde(skip)]
    pub extensions: String,
}

impl DeviceInfo {
    /// Whether the device advertises the named extension.
    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions.split_whitespace().any(|e| e == name)
    }

    /// A one-line description used in messages: `[1] NVIDIA H100 (NVIDIA CUDA, GPU)`.
    pub fn label(&self) -> String {
        format!(
            "[{}] {} ({}, {})",
            self.index, self.name, self.platform, self.device_type
        )
    }

    fn query(index: usize, platform: &Platform, device: &ClDevice) -> Result<Self> {
        let call = |what: &str| format!("clGetDeviceInfo({what}) on device {index}");
        let extensions = device.extensions().during(call("EXTENSIONS"))?;
        let has = |e: &str| extensions.split_whitespace().any(|x| x == e);
        let fp64 = has("cl_khr_fp64") || device.double_fp_config().map(|c| c != 0).unwrap_or(false);
        Ok(Self {
            index,
            platform: platform.name().during("clGetPlatformInfo(NAME)")?,
            name: device.name().during(call("NAME"))?.trim().to_string(),
            vendor: device.vendor().during(call("VENDOR"))?.trim().to_string(),
            device_type: DeviceType::from_bits(device.dev_type().during(call("TYPE"))?),
            version: device.version().during(call("VERSION"))?.trim().to_string(),
            opencl_c_version: device
                .opencl_c_version()
                .during(call("OPENCL_C_VERSION"))?
                .trim()
                .to_string(),
            driver_version: device
                .driver_version()
                .during(call("DRIVER_VERSION"))?
                .trim()
                .to_string(),
            compute_units: device
                .max_compute_units()
                .during(call("MAX_COMPUTE_UNITS"))?,
            max_clock_mhz: device.max_clock_frequency().ok().filter(|&mhz| mhz > 0),
            global_mem_bytes: device.global_mem_size().during(call("GLOBAL_MEM_SIZE"))?,
            max_alloc_bytes: device
                .max_mem_alloc_size()
                .during(call("MAX_MEM_ALLOC_SIZE"))?,
            local_mem_bytes: device.local_mem_size().during(call("LOCAL_MEM_SIZE"))?,
            max_work_group_size: device
                .max_work_group_size()
                .during(call("MAX_WORK_GROUP_SIZE"))?,
            fp64,
            gl_sharing: has("cl_khr_gl_sharing"),
            uuid: has("cl_khr_device_uuid")
                .then(|| device.uuid_khr().ok().map(|u| uuid_text(&u)))
                .flatten(),
            pci_bus: has("cl_khr_pci_bus_info")
                .then(|| pci_bus_of(device))
                .flatten(),
            extensions,
        })
    }
}

/// A 16-byte UUID as `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn uuid_text(bytes: &[u8; 16]) -> String {
    let hex = |r: std::ops::Range<usize>| -> String {
        bytes[r].iter().map(|b| format!("{b:02x}")).collect()
    };
    format!(
        "{}-{}-{}-{}-{}",
        hex(0..4),
        hex(4..6),
        hex(6..8),
        hex(8..10),
        hex(10..16)
    )
}

/// `CL_DEVICE_PCI_BUS_INFO_KHR` as `dddd:bb:dd.f`; `None` if the driver fails or answers
/// with another size than the four `cl_uint`s the extension defines.
fn pci_bus_of(device: &ClDevice) -> Option<String> {
    let bytes: Vec<u8> =
        opencl3::device::get_device_info(device.id(), opencl3::device::CL_DEVICE_PCI_BUS_INFO_KHR)
            .ok()?
            .into();
    pci_bus_text(&bytes)
}

/// Four native-endian `cl_uint`s (domain, bus, device, function) as `dddd:bb:dd.f`; `None`
/// for any other length.
pub fn pci_bus_text(bytes: &[u8]) -> Option<String> {
    if bytes.len() != 16 {
        return None;
    }
    let word = |i: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&bytes[4 * i..4 * i + 4]);
        u32::from_ne_bytes(w)
    };
    Some(format!(
        "{:04x}:{:02x}:{:02x}.{:x}",
        word(0),
        word(1),
        word(2),
        word(3)
    ))
}

/// One device found on the machine: its description and its OpenCL handle.
#[derive(Clone, Debug)]
pub struct DeviceEntry {
    /// What the device is.
    pub info: DeviceInfo,
    /// The OpenCL device handle.
    pub device: ClDevice,
}

/// Lists every device of every OpenCL platform, numbered in platform order.
///
/// A missing ICD loader or an empty platform list is [`Error::NoPlatform`]; platforms that
/// report no device (Mesa's Clover often does) are skipped. Safe to call from several
/// threads at once.
pub fn list_devices() -> Result<Vec<DeviceEntry>> {
    // Some drivers (PoCL 3.1) initialise lazily and report no device to a second thread that
    // asks while the first is still initialising; enumerate one thread at a time.
    static ENUMERATION: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = ENUMERATION
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let platforms = get_platforms().map_err(|code| Error::NoPlatform {
        reason: if code.0 == DLOPEN_RUNTIME_LOAD_FAILED {
            "libOpenCL.so.1 could not be loaded".to_string()
        } else {
            format!("clGetPlatformIDs returned {code}")
        },
    })?;
    if platforms.is_empty() {
        return Err(Error::NoPlatform {
            reason: "the OpenCL loader lists no platform".to_string(),
        });
    }
    let mut entries = Vec::new();
    for platform in &platforms {
        let ids = match platform.get_devices(CL_DEVICE_TYPE_ALL) {
            Ok(ids) => ids,
            Err(code) if code.0 == CL_DEVICE_NOT_FOUND => continue,
            Err(code) => return Err(code).during("clGetDeviceIDs"),
        };
        for id in ids {
            let device = ClDevice::new(id);
            let info = DeviceInfo::query(entries.len(), platform, &device)?;
            entries.push(DeviceEntry { info, device });
        }
    }
    if entries.is_empty() {
        let names: Vec<String> = platforms.iter().filter_map(|p| p.name().ok()).collect();
        return Err(Error::NoDevice {
            platforms: names.join(", "),
        });
    }
    Ok(entries)
}

/// How the user names a device: `--device 1`, `--device h100`, `--device pocl`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DeviceSelector {
    /// The first GPU, else the first device.
    #[default]
    Default,
    /// A position in [`list_devices`]'s order.
    Index(usize),
    /// A case-insensitive substring of the device name, platform, vendor or version string.
    Name(String),
}

impl FromStr for DeviceSelector {
    type Err = String;

    /// `default`, an index, or a name; an empty selector is an error (an unset variable in a
    /// script should not silently pick a device).
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            return Err(
                "empty device selector: give an index, part of a name, or `default`".to_string(),
            );
        }
        Ok(if s.eq_ignore_ascii_case("default") {
            Self::Default
        } else if let Ok(i) = s.parse::<usize>() {
            Self::Index(i)
        } else {
            Self::Name(s.to_string())
        })
    }
}

impl fmt::Display for DeviceSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::Index(i) => write!(f, "{i}"),
            Self::Name(n) => f.write_str(n),
        }
    }
}

impl DeviceSelector {
    /// Picks the device this selector names from `devices`.
    ///
    /// A name equal to one device's name wins even if it is also a substring of others;
    /// otherwise a name must match exactly one device's name, platform, vendor or version
    /// string (PoCL and CUDA say who they are there).
    pub fn select<'a>(&self, devices: &'a [DeviceEntry]) -> Result<&'a DeviceEntry> {
        let infos: Vec<&DeviceInfo> = devices.iter().map(|d| &d.info).collect();
        Ok(&devices[self.position(&infos)?])
    }

    /// Position in `infos` of the device this selector names (see [`DeviceSelector::select`]).
    pub fn position(&self, infos: &[&DeviceInfo]) -> Result<usize> {
        let listing = |list: &[usize]| {
            list.iter()
                .map(|&i| format!("  {}", infos[i].label()))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let not_found = || Error::NoMatchingDevice {
            selector: self.to_string(),
            available: listing(&(0..infos.len()).collect::<Vec<_>>()),
        };
        match self {
            Self::Default => infos
                .iter()
                .position(|d| d.device_type == DeviceType::Gpu)
                .or(if infos.is_empty() { None } else { Some(0) })
                .ok_or_else(not_found),
            Self::Index(i) if *i < infos.len() => Ok(*i),
            Self::Index(_) => Err(not_found()),
            Self::Name(name) => {
                let needle = name.to_lowercase();
                if let Some(exact) = infos.iter().position(|d| d.name.to_lowercase() == needle) {
                    return Ok(exact);
                }
                let matches: Vec<usize> = (0..infos.len())
                    .filter(|&i| {
                        let d = infos[i];
                        [&d.name, &d.platform, &d.vendor, &d.version]
                            .iter()
                            .any(|s| s.to_lowercase().contains(&needle))
                    })
                    .collect();
                match matches.as_slice() {
                    [one] => Ok(*one),
                    [] => Err(not_found()),
                    _ => Err(Error::AmbiguousDevice {
                        selector: name.clone(),
                        matches: listing(&matches),
                    }),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(index: usize, name: &str, platform: &str, version: &str) -> DeviceInfo {
        let device_type = if version.contains("CUDA") {
            DeviceType::Gpu
        } else {
            DeviceType::Cpu
        };
        DeviceInfo {
            index,
            platform: platform.to_string(),
            name: name.to_string(),
            vendor: String::new(),
            device_type,
            version: version.to_string(),
            opencl_c_version: String::new(),
            driver_version: String::new(),
            compute_units: 1,
            max_clock_mhz: None,
            global_mem_bytes: 0,
            max_alloc_bytes: 0,
            local_mem_bytes: 0,
            max_work_group_size: 1,
            fp64: false,
            gl_sharing: false,
            uuid: None,
            pci_bus: None,
            extensions: String::new(),
        }
    }

    #[test]
    fn uuids_and_pci_addresses_read_as_their_usual_text() {
        let uuid: [u8; 16] = std::array::from_fn(|i| (i * 17) as u8);
        assert_eq!(uuid_text(&uuid), "00112233-4455-6677-8899-aabbccddeeff");
        let words = [0u32, 0x1b, 0, 0];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        assert_eq!(pci_bus_text(&bytes).as_deref(), Some("0000:1b:00.0"));
        assert_eq!(pci_bus_text(&bytes[..12]), None);
    }

    fn machine() -> Vec<DeviceInfo> {
        vec![
            info(0, "NVIDIA H100 80GB HBM3", "NVIDIA CUDA", "OpenCL 3.0 CUDA"),
            info(
                1,
                "cpu-skylake-avx512",
                "Portable Computing Language",
                "OpenCL 3.0 PoCL HSTR: x",
            ),
            info(2, "NVIDIA H100", "NVIDIA CUDA", "OpenCL 3.0 CUDA"),
        ]
    }

    fn pick(selector: &str, infos: &[DeviceInfo]) -> Result<usize> {
        let refs: Vec<&DeviceInfo> = infos.iter().collect();
        selector.parse::<DeviceSelector>().unwrap().position(&refs)
    }

    #[test]
    fn default_prefers_the_first_gpu() {
        let mut infos = machine();
        infos.rotate_left(1); // CPU first now
        assert_eq!(pick("default", &infos).unwrap(), 1);
        assert!("".parse::<DeviceSelector>().is_err());
        assert!(
            "-1".parse::<DeviceSelector>()
                .is_ok_and(|s| s == DeviceSelector::Name("-1".into()))
        );
        assert_eq!(pick("default", &infos[..1]).unwrap(), 0);
    }

    #[test]
    fn index_and_names_select_case_insensitively() {
        let infos = machine();
        assert_eq!(pick("1", &infos).unwrap(), 1);
        assert_eq!(pick("POCL", &infos).unwrap(), 1);
        assert_eq!(pick("portable", &infos).unwrap(), 1);
        assert_eq!(pick("nvidia h100", &infos).unwrap(), 2, "exact name wins");
        assert_eq!(pick("80GB", &infos).unwrap(), 0);
    }

    #[test]
    fn bad_selectors_name_the_available_devices() {
        let infos = machine();
        let err = pick("7", &infos).unwrap_err().to_string();
        assert!(
            err.contains("`7`") && err.contains("[1] cpu-skylake-avx512"),
            "{err}"
        );
        let err = pick("amd", &infos).unwrap_err().to_string();
        assert!(err.contains("no OpenCL device matches `amd`"), "{err}");
        let err = pick("h100", &infos).unwrap_err().to_string();
        assert!(
            err.contains("several") && err.contains("[0]") && err.contains("[2]"),
            "{err}"
        );
        assert!(pick("default", &[]).is_err());
    }
}
