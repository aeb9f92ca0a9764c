//! The EGL devices of the machine (`eglQueryDevicesEXT`) with what ties each to an OpenCL
//! device: its UUID (`EGL_EXT_device_persistent_id`) and its PCI address (from the DRM node of
//! `EGL_EXT_device_drm`, through sysfs). The headless drawing opens the EGL device that matches
//! the OpenCL device holding the particles, so that the buffers the two APIs share are on one
//! GPU; `snowsim devices` shows the match.

use std::ffi::{c_char, c_void};
use std::path::Path;

use glutin::api::egl::device::Device;

use crate::cl::{DeviceInfo, uuid_text};

/// `EGL_DEVICE_UUID_EXT` (`EGL_EXT_device_persistent_id`).
const EGL_DEVICE_UUID_EXT: i32 = 0x335C;

/// One EGL device and what identifies it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct EglDevice {
    /// Its position in `eglQueryDevicesEXT`'s list (what `SNOWSIM_EGL_DEVICE` selects).
    pub index: usize,
    /// Its name or vendor, where the driver gives one.
    pub name: Option<String>,
    /// Mesa's software device (`EGL_MESA_device_software`).
    pub software: bool,
    /// Its UUID as `8-4-4-4-12` hex digits, where the driver reports it.
    pub uuid: Option<String>,
    /// Its PCI address, `domain:bus:device.function`, where its DRM node leads to one.
    pub pci_bus: Option<String>,
}

/// Every EGL device, with its UUID and PCI address where they can be found; empty where EGL
/// has no device enumeration.
pub fn list() -> Vec<EglDevice> {
    let Ok(devices) = Device::query_devices() else {
        return Vec::new();
    };
    let query_binary = binary_query();
    devices
        .enumerate()
        .map(|(index, d)| EglDevice {
            index,
            name: d.name().or(d.vendor()).map(str::to_string),
            software: d.extensions().contains("EGL_MESA_device_software"),
            uuid: d
                .extensions()
                .contains("EGL_EXT_device_persistent_id")
                .then(|| query_binary.and_then(|q| uuid_of(&d, q)))
                .flatten(),
            pci_bus: d.drm_device_node_path().and_then(pci_bus_of_node),
        })
        .collect()
}

/// The EGL device that is the OpenCL device `cl`: the same UUID, else the same PCI address.
pub fn matching(cl: &DeviceInfo, egl: &[EglDevice]) -> Option<usize> {
    let same = |a: &Option<String>, b: &Option<String>| a.is_some() && a == b;
    egl.iter()
        .find(|e| same(&e.uuid, &cl.uuid))
        .or_else(|| egl.iter().find(|e| same(&e.pci_bus, &cl.pci_bus)))
        .map(|e| e.index)
}

/// `eglQueryDeviceBinaryEXT(device, name, max, value, size)`.
type QueryBinary = unsafe extern "C" fn(*const c_void, i32, i32, *mut c_void, *mut i32) -> u32;

/// `eglQueryDeviceBinaryEXT` from the system's libEGL (not in glutin's bindings).
fn binary_query() -> Option<QueryBinary> {
    use std::sync::OnceLock;
    static QUERY: OnceLock<Option<(libloading::Library, QueryBinary)>> = OnceLock::new();
    QUERY
        .get_or_init(|| {
            // SAFETY: libEGL's initialisers are safe to run; the symbols are looked up by
            // their standard names and types (EGL 1.4 `eglGetProcAddress`, and the extension's
            // `eglQueryDeviceBinaryEXT` signature).
            unsafe {
                let lib = libloading::Library::new("libEGL.so.1").ok()?;
                let get_proc: libloading::Symbol<
                    unsafe extern "C" fn(*const c_char) -> *const c_void,
                > = lib.get(b"eglGetProcAddress\0").ok()?;
                let f = get_proc(c"eglQueryDeviceBinaryEXT".as_ptr());
                if f.is_null() {
                    return None;
                }
                let f: QueryBinary = std::mem::transmute::<*const c_void, QueryBinary>(f);
                Some((lib, f))
            }
        })
        .as_ref()
        .map(|(_, f)| *f)
}

/// The device's UUID through `eglQueryDeviceBinaryEXT`, or `None` if the driver fails.
fn uuid_of(device: &Device, query: QueryBinary) -> Option<String> {
    let mut bytes = [0u8; 16];
    let mut size = 0i32;
    // SAFETY: the device handle is live (its list is), the buffer holds 16 bytes and the call
    // writes at most `max` of them and their count into `size`.
    let ok = unsafe {
        query(
            device.raw_device(),
            EGL_DEVICE_UUID_EXT,
            16,
            bytes.as_mut_ptr().cast(),
            &mut size,
        )
    };
    (ok != 0 && size == 16).then(|| uuid_text(&bytes))
}

/// The PCI address a DRM device node leads to through sysfs: `/dev/dri/card1` →
/// `/sys/class/drm/card1/device` → `…/0000:1b:00.0`.
fn pci_bus_of_node(node: &Path) -> Option<String> {
    let name = node.file_name()?;
    let device = Path::new("/sys/class/drm").join(name).join("device");
    let target = std::fs::canonicalize(device).ok()?;
    pci_address(target.file_name()?.to_str()?)
}

/// `dddd:bb:dd.f` (hex) in lower case if `text` is one, else `None`.
pub fn pci_address(text: &str) -> Option<String> {
    let (domain, rest) = text.split_once(':')?;
    let (bus, rest) = rest.split_once(':')?;
    let (device, function) = rest.split_once('.')?;
    let hex = |s: &str, len: usize| s.len() == len && s.chars().all(|c| c.is_ascii_hexdigit());
    (hex(domain, 4) && hex(bus, 2) && hex(device, 2) && hex(function, 1))
        .then(|| text.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn egl(index: usize, uuid: Option<&str>, pci: Option<&str>) -> EglDevice {
        EglDevice {
            index,
            name: None,
            software: false,
            uuid: uuid.map(str::to_string),
            pci_bus: pci.map(str::to_string),
        }
    }

    #[test]
    fn an_opencl_device_matches_the_egl_device_of_its_uuid_else_its_pci_address() {
        let mut cl = DeviceInfo {
            index: 1,
            platform: "NVIDIA CUDA".into(),
            name: "NVIDIA H100".into(),
            vendor: String::new(),
            device_type: crate::cl::DeviceType::Gpu,
            version: String::new(),
            opencl_c_version: String::new(),
            driver_version: String::new(),
            compute_units: 132,
            max_clock_mhz: None,
            global_mem_bytes: 0,
            max_alloc_bytes: 0,
            local_mem_bytes: 0,
            max_work_group_size: 1024,
            fp64: true,
            gl_sharing: false,
            uuid: None,
            pci_bus: None,
            extensions: String::new(),
        };
        let devices = [
            egl(0, None, None),
            egl(1, Some("aa"), Some("0000:1b:00.0")),
            egl(2, Some("bb"), Some("0000:2c:00.0")),
        ];
        assert_eq!(matching(&cl, &devices), None);
        cl.pci_bus = Some("0000:2c:00.0".into());
        assert_eq!(matching(&cl, &devices), Some(2));
        cl.uuid = Some("aa".into());
        assert_eq!(matching(&cl, &devices), Some(1), "the UUID comes first");
        cl.uuid = Some("cc".into());
        assert_eq!(matching(&cl, &devices), Some(2));
    }

    #[test]
    fn pci_addresses_are_read_from_sysfs_names_only_when_well_formed() {
        assert_eq!(pci_address("0000:1B:00.0").as_deref(), Some("0000:1b:00.0"));
        assert_eq!(pci_address("card1"), None);
        assert_eq!(pci_address("0000:1b:00"), None);
        assert_eq!(pci_address("000:1b:00.0"), None);
    }
}
