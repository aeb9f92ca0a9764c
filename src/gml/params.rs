//! The user's parameter struct, mirrored between a `#[repr(C)]` Rust type and an OpenCL
//! `GmlParSct`, and passed to every kernel as `GmlPar`.

use std::marker::PhantomData;

use bytemuck::Pod;

use super::Gml;
use super::error::{GmlError, Result};
use crate::cl::{self, DeviceBuffer, PendingRead, Program, Source, WorkSize};

/// Handle to the declared parameters, typed by the Rust struct they mirror.
pub struct Parameters<P> {
    _type: PhantomData<fn() -> P>,
    instance: u32,
}

impl<P> std::fmt::Debug for Parameters<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Parameters<{}>", std::any::type_name::<P>())
    }
}

/// The parameter block of an instance.
pub(crate) struct Block {
    pub source: String,
    pub size: usize,
    pub buffer: DeviceBuffer<u8>,
}

/// Used when no parameters are declared, so every kernel has the same `GmlPar` argument.
const EMPTY: &str = "typedef struct { int GmlUnused; } GmlParSct;\n";

impl Gml {
    pub(crate) fn params_source(&self) -> String {
        self.params
            .as_ref()
            .map_or_else(|| EMPTY.to_string(), |p| p.source.clone())
    }

    pub(crate) fn params_buffer(&self) -> Option<&DeviceBuffer<u8>> {
        self.params.as_ref().map(|p| &p.buffer)
    }

    /// Allocates the empty block when no parameters were declared.
    pub(crate) fn ensure_params(&mut self) -> Result<()> {
        if self.params.is_none() {
            self.params = Some(Block {
                source: EMPTY.to_string(),
                size: 4,
                buffer: DeviceBuffer::zeroed(&self.context, 4)?,
            });
        }
        Ok(())
    }
}

/// Compiles `opencl`, asks the device for `sizeof(GmlParSct)` and compares it with `P`'s size.
pub(crate) fn declare<P: Pod>(gml: &mut Gml, opencl: &str) -> Result<Parameters<P>> {
    let probe =
        "__kernel void gml_parameter_size(__global uint *size) { size[0] = sizeof(GmlParSct); }\n";
    let program = Program::build(
        &gml.context,
        &[
            Source::new("parameters", opencl.to_string()),
            Source::new("gml_parameter_size", probe),
        ],
        "",
    )?;
    let kernel = program.kernel("gml_parameter_size")?;
    let out = DeviceBuffer::<u32>::zeroed(&gml.context, 1)?;
    let mut call = kernel.call();
    // SAFETY: one buffer argument of one uint, written by a single work-item.
    unsafe { call.buffer(&out)? };
    let event = call.enqueue(
        &gml.context,
        WorkSize {
            global: 1,
            local: 1,
        },
    )?;
    cl::event_duration(&event)?;
    let device = out.read()?[0] as usize;
    let host = std::mem::size_of::<P>();
    if device != host {
        return Err(GmlError::ParameterLayout { device, host });
    }
    gml.params = Some(Block {
        source: opencl.to_string(),
        size: host,
        buffer: DeviceBuffer::zeroed(&gml.context, host.max(1))?,
    });
    Ok(Parameters {
        _type: PhantomData,
        instance: gml.instance,
    })
}

/// Checks that `parameters` is this instance's declared block.
pub(crate) fn check_handle<P>(gml: &mut Gml, parameters: &Parameters<P>) -> Result<()> {
    block(gml, parameters).map(|_| ())
}

fn block<'a, P>(gml: &'a mut Gml, parameters: &Parameters<P>) -> Result<&'a mut Block> {
    if parameters.instance != gml.instance {
        return Err(GmlError::NoParameters);
    }
    match &mut gml.params {
        Some(b) if b.size == std::mem::size_of::<P>() => Ok(b),
        _ => Err(GmlError::NoParameters),
    }
}

pub(crate) fn upload<P: Pod>(gml: &mut Gml, parameters: &Parameters<P>, value: &P) -> Result<()> {
    block(gml, parameters)?
        .buffer
        .write(bytemuck::bytes_of(value))?;
    Ok(())
}

pub(crate) fn download<P: Pod>(gml: &mut Gml, parameters: &Parameters<P>) -> Result<P> {
    let bytes = block(gml, parameters)?.buffer.read()?;
    Ok(bytemuck::pod_read_unaligned(&bytes))
}

/// Starts reading the device's parameter struct without waiting (a solver's residual, left
/// there by [`Gml::reduce_into_parameters`], checked every few iterations).
pub(crate) fn download_async<P: Pod>(
    gml: &mut Gml,
    parameters: &Parameters<P>,
) -> Result<PendingParameters<P>> {
    let block = block(gml, parameters)?;
    Ok(PendingParameters {
        read: block.buffer.read_async(0, block.size)?,
        _type: PhantomData,
    })
}

/// The parameter struct on its way back from the device.
pub struct PendingParameters<P> {
    read: PendingRead<u8>,
    _type: PhantomData<fn() -> P>,
}

impl<P: Pod> PendingParameters<P> {
    /// Whether it has arrived (never blocks).
    pub fn is_ready(&self) -> Result<bool> {
        Ok(self.read.is_ready()?)
    }

    /// Waits for it.
    pub fn wait(self) -> Result<P> {
        let bytes = self.read.wait()?;
        Ok(bytemuck::pod_read_unaligned(&bytes))
    }
}
