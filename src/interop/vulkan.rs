//! Vulkan as the allocator of memory that OpenCL and OpenGL both import (`--interop external`):
//! neither of them can export memory, Vulkan can (`VK_KHR_external_memory_fd`).
//!
//! The Vulkan loader is opened at run time (`ash::Entry::load`), once per process and never
//! closed: building needs nothing, and a machine without `libvulkan.so.1` gets a clear error,
//! never a failed link.
//!
//! # Who owns what
//!
//! - Every [`ExportedMemory::fd`] / [`ExportedSemaphore::fd`] call makes a **fresh** file
//!   descriptor (`vkGetMemoryFdKHR`), owned by the caller as an [`OwnedFd`]: it closes itself
//!   unless handed to an importer that takes it (see `super::external` for each importer).
//! - The Vulkan buffer and memory live as long as their [`ExportedMemory`]; the imports hold
//!   their own references to the payload, but are always destroyed first (see `super::external`).
//! - The device and instance live until the last [`Exporter`] clone and the last object made
//!   from it are dropped.

use std::ffi::CStr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::rc::Rc;

use ash::vk;

/// What went wrong on the Vulkan side.
#[derive(Debug, thiserror::Error)]
pub enum VulkanError {
    /// No Vulkan loader on this machine.
    #[error(
        "cannot load Vulkan ({0}); --interop external needs libvulkan.so.1 and a Vulkan driver \
         for the GPU (Debian: libvulkan1)"
    )]
    Loader(String),
    /// A Vulkan call failed.
    #[error("{call} failed: {result}")]
    Call {
        /// The call.
        call: &'static str,
        /// Its result code.
        result: vk::Result,
    },
    /// No Vulkan device can export memory as an opaque fd, or none is the wanted GPU.
    #[error("no Vulkan device {0}")]
    NoDevice(String),
}

type Result<T> = std::result::Result<T, VulkanError>;

fn call(call: &'static str) -> impl FnOnce(vk::Result) -> VulkanError {
    move |result| VulkanError::Call { call, result }
}

/// Exported buffers are whole multiples of this: Mesa's llvmpipe 22.3 refuses
/// `glBufferStorageMemEXT` on a 64-byte import of lavapipe memory (GL_OUT_OF_MEMORY) and takes
/// 64 KiB, and GPU drivers allocate in such pages anyway.
pub const ALLOCATION_GRAIN: u64 = 64 * 1024;

/// The device extensions an exporter enables: memory always, semaphores where offered.
const MEMORY_FD: &CStr = ash::khr::external_memory_fd::NAME;
const SEMAPHORE_FD: &CStr = ash::khr::external_semaphore_fd::NAME;

/// One Vulkan physical device, as [`devices`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VulkanDevice {
    /// `VkPhysicalDeviceProperties::deviceName`.
    pub name: String,
    /// `VkPhysicalDeviceIDProperties::deviceUUID`.
    pub uuid: [u8; 16],
    /// Whether it offers `VK_KHR_external_memory_fd`.
    pub memory_fd: bool,
    /// Whether it offers `VK_KHR_external_semaphore_fd`.
    pub semaphore_fd: bool,
}

struct Inner {
    instance: ash::Instance,
    device: ash::Device,
    memory_fd: ash::khr::external_memory_fd::Device,
    semaphore_fd: Option<ash::khr::external_semaphore_fd::Device>,
    memory_types: vk::PhysicalDeviceMemoryProperties,
    chosen: VulkanDevice,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: every object made from the device holds an `Exporter` clone, so none is left.
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// A Vulkan device that allocates exportable memory and semaphores. Cheap to clone.
#[derive(Clone)]
pub struct Exporter(Rc<Inner>);

/// The Vulkan loader, opened once and never closed: on NVIDIA the Vulkan driver is the very
/// library that implements OpenGL (`libGLX_nvidia.so.0`), and unloading the loader with the
/// last Vulkan object left the process's GL context unable to create a shader.
fn entry() -> Result<&'static ash::Entry> {
    static ENTRY: std::sync::OnceLock<std::result::Result<ash::Entry, String>> =
        std::sync::OnceLock::new();
    ENTRY
        // SAFETY: loading the system's Vulkan loader, as its documentation asks.
        .get_or_init(|| unsafe { ash::Entry::load() }.map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| VulkanError::Loader(e.clone()))
}

fn load() -> Result<(&'static ash::Entry, ash::Instance)> {
    let entry = entry()?;
    let app = vk::ApplicationInfo::default()
        .application_name(c"snowsim")
        .api_version(vk::API_VERSION_1_1);
    let info = vk::InstanceCreateInfo::default().application_info(&app);
    // SAFETY: a valid create info; the instance is destroyed by its owner.
    let instance =
        unsafe { entry.create_instance(&info, None) }.map_err(call("vkCreateInstance"))?;
    Ok((entry, instance))
}

fn describe(instance: &ash::Instance, physical: vk::PhysicalDevice) -> Result<VulkanDevice> {
    let mut id = vk::PhysicalDeviceIDProperties::default();
    let mut properties = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
    // SAFETY: a physical device of this instance; the chain is well formed.
    unsafe { instance.get_physical_device_properties2(physical, &mut properties) };
    let name = properties
        .properties
        .device_name_as_c_str()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // SAFETY: a physical device of this instance.
    let extensions = unsafe { instance.enumerate_device_extension_properties(physical) }
        .map_err(call("vkEnumerateDeviceExtensionProperties"))?;
    let offers = |wanted: &CStr| {
        extensions
            .iter()
            .any(|e| e.extension_name_as_c_str().is_ok_and(|n| n == wanted))
    };
    Ok(VulkanDevice {
        name,
        uuid: id.device_uuid,
        memory_fd: offers(MEMORY_FD),
        semaphore_fd: offers(SEMAPHORE_FD),
    })
}

/// Every Vulkan device of this machine.
pub fn devices() -> Result<Vec<VulkanDevice>> {
    let (_entry, instance) = load()?;
    // SAFETY: the instance is alive until destroyed below.
    let listed = unsafe { instance.enumerate_physical_devices() }
        .map_err(call("vkEnumeratePhysicalDevices"))
        .and_then(|all| all.into_iter().map(|p| describe(&instance, p)).collect());
    // SAFETY: nothing made from the instance is alive.
    unsafe { instance.destroy_instance(None) };
    listed
}

impl Exporter {
    /// The Vulkan device whose UUID is `uuid` (the GPU that OpenCL and OpenGL run on), or,
    /// with `None`, the first that can export memory.
    ///
    /// One device per GPU and thread, opened on first use and kept until the thread ends: on
    /// NVIDIA (driver 580) destroying the Vulkan device and instance left the thread's current
    /// GL context unable to create a shader, so a second session in the same GL context failed.
    pub fn new(uuid: Option<[u8; 16]>) -> Result<Self> {
        thread_local! {
            static OPENED: std::cell::RefCell<Vec<Exporter>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let cached = OPENED.with_borrow(|opened| {
            opened
                .iter()
                .find(|e| uuid.is_none_or(|u| u == e.device().uuid))
                .cloned()
        });
        if let Some(exporter) = cached {
            return Ok(exporter);
        }
        let (_entry, instance) = load()?;
        match Self::open(&instance, uuid) {
            Ok(inner) => {
                let exporter = Self(Rc::new(inner));
                OPENED.with_borrow_mut(|opened| opened.push(exporter.clone()));
                Ok(exporter)
            }
            Err(e) => {
                // SAFETY: `open` failed, so no device of this instance is alive.
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    fn open(instance: &ash::Instance, uuid: Option<[u8; 16]>) -> Result<Inner> {
        // SAFETY: the instance is alive.
        let physicals = unsafe { instance.enumerate_physical_devices() }
            .map_err(call("vkEnumeratePhysicalDevices"))?;
        let mut seen = Vec::new();
        let mut chosen = None;
        for physical in physicals {
            let device = describe(instance, physical)?;
            if device.memory_fd && uuid.is_none_or(|u| u == device.uuid) {
                chosen = Some((physical, device));
                break;
            }
            seen.push(format!("{} ({})", device.name, uuid_hex(&device.uuid)));
        }
        let Some((physical, chosen)) = chosen else {
            return Err(VulkanError::NoDevice(match uuid {
                Some(u) => format!(
                    "has UUID {} and VK_KHR_external_memory_fd (found: {})",
                    uuid_hex(&u),
                    list_or_none(&seen)
                ),
                None => format!(
                    "offers VK_KHR_external_memory_fd (found: {})",
                    list_or_none(&seen)
                ),
            }));
        };
        let mut extensions = vec![MEMORY_FD.as_ptr()];
        if chosen.semaphore_fd {
            extensions.push(SEMAPHORE_FD.as_ptr());
        }
        let priorities = [1.0f32];
        let queue = vk::DeviceQueueCreateInfo::default()
            .queue_family_index(0)
            .queue_priorities(&priorities);
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(std::slice::from_ref(&queue))
            .enabled_extension_names(&extensions);
        // SAFETY: a physical device of this instance, extensions it offers, one queue of family
        // 0 (every device has one).
        let device = unsafe { instance.create_device(physical, &info, None) }
            .map_err(call("vkCreateDevice"))?;
        let memory_fd = ash::khr::external_memory_fd::Device::new(instance, &device);
        let semaphore_fd = chosen
            .semaphore_fd
            .then(|| ash::khr::external_semaphore_fd::Device::new(instance, &device));
        // SAFETY: a physical device of this instance.
        let memory_types = unsafe { instance.get_physical_device_memory_properties(physical) };
        Ok(Inner {
            instance: instance.clone(),
            device,
            memory_fd,
            semaphore_fd,
            memory_types,
            chosen,
        })
    }

    /// The device in use.
    pub fn device(&self) -> &VulkanDevice {
        &self.0.chosen
    }

    /// Whether semaphores can be exported (`VK_KHR_external_semaphore_fd`).
    pub fn has_semaphores(&self) -> bool {
        self.0.semaphore_fd.is_some()
    }

    /// Allocates `bytes` of device-local memory that can be exported as an opaque fd, bound to
    /// a buffer usable as storage and vertex data, in a dedicated allocation where the driver
    /// asks for one. The buffer is rounded up to [`ALLOCATION_GRAIN`].
    pub fn allocate(&self, bytes: u64) -> Result<ExportedMemory> {
        let inner = &self.0;
        let bytes = bytes.max(1).div_ceil(ALLOCATION_GRAIN) * ALLOCATION_GRAIN;
        let device = &inner.device;
        let mut external = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let info = vk::BufferCreateInfo::default()
            .size(bytes)
            .usage(
                vk::BufferUsageFlags::STORAGE_BUFFER
                    | vk::BufferUsageFlags::VERTEX_BUFFER
                    | vk::BufferUsageFlags::TRANSFER_SRC
                    | vk::BufferUsageFlags::TRANSFER_DST,
            )
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut external);
        // SAFETY: a valid create info on a live device.
        let buffer =
            unsafe { device.create_buffer(&info, None) }.map_err(call("vkCreateBuffer"))?;
        let destroy_buffer = |e| {
            // SAFETY: the buffer was created above and is bound to nothing alive.
            unsafe { device.destroy_buffer(buffer, None) };
            e
        };
        let mut dedicated_needs = vk::MemoryDedicatedRequirements::default();
        let mut needs = vk::MemoryRequirements2::default().push_next(&mut dedicated_needs);
        let query = vk::BufferMemoryRequirementsInfo2::default().buffer(buffer);
        // SAFETY: the buffer is alive; the chain is well formed.
        unsafe { device.get_buffer_memory_requirements2(&query, &mut needs) };
        let requirements = needs.memory_requirements;
        let dedicated = dedicated_needs.requires_dedicated_allocation == vk::TRUE
            || dedicated_needs.prefers_dedicated_allocation == vk::TRUE;
        let Some(memory_type) = memory_type(
            &inner.memory_types,
            requirements.memory_type_bits,
            vk::MemoryPropertyFlags::DEVICE_LOCAL,
        ) else {
            return Err(destroy_buffer(VulkanError::NoDevice(format!(
                "memory type for an exportable buffer on {} (allowed types {:#b})",
                inner.chosen.name, requirements.memory_type_bits
            ))));
        };
        let mut export = vk::ExportMemoryAllocateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let mut dedicated_info = vk::MemoryDedicatedAllocateInfo::default().buffer(buffer);
        let mut allocate = vk::MemoryAllocateInfo::default()
            .allocation_size(requirements.size)
            .memory_type_index(memory_type)
            .push_next(&mut export);
        if dedicated {
            allocate = allocate.push_next(&mut dedicated_info);
        }
        // SAFETY: a valid allocate info on a live device.
        let memory = unsafe { device.allocate_memory(&allocate, None) }
            .map_err(|r| destroy_buffer(call("vkAllocateMemory")(r)))?;
        // SAFETY: buffer and memory are alive, the memory satisfies the buffer's requirements.
        if let Err(r) = unsafe { device.bind_buffer_memory(buffer, memory, 0) } {
            // SAFETY: created above, used by nothing.
            unsafe { device.free_memory(memory, None) };
            return Err(destroy_buffer(call("vkBindBufferMemory")(r)));
        }
        let host_visible = inner.memory_types.memory_types[memory_type as usize]
            .property_flags
            .contains(
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
            );
        Ok(ExportedMemory {
            exporter: self.clone(),
            buffer,
            memory,
            bytes,
            allocation_bytes: requirements.size,
            dedicated,
            host_visible,
        })
    }

    /// A binary semaphore that can be exported as an opaque fd, or `None` without
    /// `VK_KHR_external_semaphore_fd`.
    pub fn semaphore(&self) -> Result<Option<ExportedSemaphore>> {
        if self.0.semaphore_fd.is_none() {
            return Ok(None);
        }
        let mut export = vk::ExportSemaphoreCreateInfo::default()
            .handle_types(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        let info = vk::SemaphoreCreateInfo::default().push_next(&mut export);
        // SAFETY: a valid create info on a live device.
        let semaphore = unsafe { self.0.device.create_semaphore(&info, None) }
            .map_err(call("vkCreateSemaphore"))?;
        Ok(Some(ExportedSemaphore {
            exporter: self.clone(),
            semaphore,
        }))
    }
}

fn memory_type(
    types: &vk::PhysicalDeviceMemoryProperties,
    allowed: u32,
    wanted: vk::MemoryPropertyFlags,
) -> Option<u32> {
    let count = types.memory_type_count as usize;
    let allowed_types = || {
        (0..count as u32)
            .filter(move |&i| allowed & (1 << i) != 0)
            .map(|i| (i, types.memory_types[i as usize].property_flags))
    };
    allowed_types()
        .find(|(_, flags)| flags.contains(wanted))
        .or_else(|| allowed_types().next())
        .map(|(i, _)| i)
}

/// A UUID as 32 hexadecimal digits.
pub fn uuid_hex(uuid: &[u8; 16]) -> String {
    uuid.iter().map(|b| format!("{b:02x}")).collect()
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// Device memory allocated by Vulkan for export, with the buffer bound to it.
pub struct ExportedMemory {
    exporter: Exporter,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    bytes: u64,
    allocation_bytes: u64,
    dedicated: bool,
    host_visible: bool,
}

impl ExportedMemory {
    /// Writes `data` at the start of the memory from the host, where the memory is
    /// host-visible and coherent (CPU drivers such as lavapipe; not a discrete GPU's
    /// device-local memory). Used to check that an importer sees what Vulkan wrote.
    pub fn write(&self, data: &[u8]) -> Result<()> {
        if !self.host_visible || data.len() as u64 > self.bytes {
            return Err(VulkanError::NoDevice(format!(
                "host-visible memory of {} bytes to write {} bytes into",
                self.bytes,
                data.len()
            )));
        }
        let device = &self.exporter.0.device;
        // SAFETY: host-visible coherent memory of this device, mapped for `data.len()` bytes,
        // written, and unmapped; nothing else maps it.
        unsafe {
            let pointer = device
                .map_memory(
                    self.memory,
                    0,
                    data.len() as u64,
                    vk::MemoryMapFlags::empty(),
                )
                .map_err(call("vkMapMemory"))?;
            std::ptr::copy_nonoverlapping(data.as_ptr(), pointer.cast::<u8>(), data.len());
            device.unmap_memory(self.memory);
        }
        Ok(())
    }

    /// Bytes of the buffer (what was asked, rounded up to [`ALLOCATION_GRAIN`]).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Bytes of the allocation (at least [`bytes`](Self::bytes)): what an importer must be told.
    pub fn allocation_bytes(&self) -> u64 {
        self.allocation_bytes
    }

    /// Whether it is a dedicated allocation (importers must say so).
    pub fn dedicated(&self) -> bool {
        self.dedicated
    }

    /// A fresh file descriptor for the memory, owned by the caller.
    pub fn fd(&self) -> Result<OwnedFd> {
        let info = vk::MemoryGetFdInfoKHR::default()
            .memory(self.memory)
            .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        // SAFETY: the memory is alive and was allocated exportable as an opaque fd.
        let fd = unsafe { self.exporter.0.memory_fd.get_memory_fd(&info) }
            .map_err(call("vkGetMemoryFdKHR"))?;
        // SAFETY: vkGetMemoryFdKHR returns a new descriptor that the application owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

impl Drop for ExportedMemory {
    fn drop(&mut self) {
        let device = &self.exporter.0.device;
        // SAFETY: created by this device; no Vulkan command uses them (none is ever recorded).
        unsafe {
            device.destroy_buffer(self.buffer, None);
            device.free_memory(self.memory, None);
        }
    }
}

/// A binary semaphore created by Vulkan for export.
pub struct ExportedSemaphore {
    exporter: Exporter,
    semaphore: vk::Semaphore,
}

impl ExportedSemaphore {
    /// A fresh file descriptor for the semaphore, owned by the caller.
    pub fn fd(&self) -> Result<OwnedFd> {
        let Some(functions) = &self.exporter.0.semaphore_fd else {
            return Err(VulkanError::NoDevice(
                "offers VK_KHR_external_semaphore_fd".into(),
            ));
        };
        let info = vk::SemaphoreGetFdInfoKHR::default()
            .semaphore(self.semaphore)
            .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        // SAFETY: the semaphore is alive and was created exportable as an opaque fd.
        let fd =
            unsafe { functions.get_semaphore_fd(&info) }.map_err(call("vkGetSemaphoreFdKHR"))?;
        // SAFETY: vkGetSemaphoreFdKHR returns a new descriptor that the application owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

impl Drop for ExportedSemaphore {
    fn drop(&mut self) {
        // SAFETY: created by this device; Vulkan never waits on or signals it.
        unsafe {
            self.exporter
                .0
                .device
                .destroy_semaphore(self.semaphore, None)
        };
    }
}
