//! The few NVML functions gputrace uses, with the library opened at run
//! time (`libnvidia-ml.so.1` ships with the NVIDIA driver; nothing links
//! against it, so gputrace runs where there is none).
//!
//! gputrace reads NVLink traffic as NVML field values: the cumulative KiB
//! a GPU sent and received over all its links (`scopeId = UINT_MAX`),
//! sampled over time. Types and field ids are NVML's (`nvml.h`,
//! `nvmlFieldValue_t`, `NVML_FI_DEV_NVLINK_*`), declared here by hand
//! because only these few are needed.
//!
//! The GPU's state over time comes from the plain device queries:
//! utilization (`nvmlDeviceGetUtilizationRates`), memory in use
//! (`nvmlDeviceGetMemoryInfo`), SM clock (`nvmlDeviceGetClockInfo` with
//! `NVML_CLOCK_SM`), power (`nvmlDeviceGetPowerUsage`) and temperature
//! (`nvmlDeviceGetTemperature` with `NVML_TEMPERATURE_GPU`). A GPU that
//! lacks one answers `NVML_ERROR_NOT_SUPPORTED`; a library that lacks one
//! leaves it `None` here.
//!
//! FFI only: depends on no gputrace crate; the CUDA producer is its only
//! user.

#![deny(unsafe_op_in_unsafe_fn)]

use std::ffi::{CString, c_char, c_int, c_uint, c_void};

use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};

/// `nvmlReturn_t`.
pub type NvmlReturn = c_int;
pub const NVML_SUCCESS: NvmlReturn = 0;
/// The device does not support the query.
pub const NVML_ERROR_NOT_SUPPORTED: NvmlReturn = 3;

/// `nvmlClockType_t`: the SM clock.
pub const NVML_CLOCK_SM: c_int = 1;
/// `nvmlTemperatureSensors_t`: the GPU die.
pub const NVML_TEMPERATURE_GPU: c_int = 0;

/// `nvmlUtilization_t`: percent of the last sample period during which
/// a kernel ran (`gpu`) and device memory was read or written (`memory`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Utilization {
    pub gpu: c_uint,
    pub memory: c_uint,
}

/// `nvmlMemory_t`: bytes of device memory.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    pub total: u64,
    pub free: u64,
    pub used: u64,
}

/// `nvmlDevice_t`.
pub type NvmlDevice = *mut c_void;

/// NVLink link count of a device.
pub const NVML_FI_DEV_NVLINK_LINK_COUNT: u32 = 91;
/// NVLink data sent, KiB, cumulative.
pub const NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: u32 = 138;
/// NVLink data received, KiB, cumulative.
pub const NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: u32 = 139;
/// Every link of the device (`scopeId`).
pub const ALL_LINKS: u32 = u32::MAX;

/// `nvmlFieldValue_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FieldValue {
    pub field_id: u32,
    pub scope_id: u32,
    pub timestamp: i64,
    pub latency_usec: i64,
    pub value_type: c_int,
    pub nvml_return: NvmlReturn,
    /// `nvmlValue_t`, a union of 8 bytes; read per `value_type`.
    pub value: u64,
}

/// `valueType` of an unsigned long long value.
pub const NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: c_int = 3;
/// `valueType` of an unsigned int value.
pub const NVML_VALUE_TYPE_UNSIGNED_INT: c_int = 1;

impl FieldValue {
    /// The value as an integer, if NVML returned one.
    pub fn as_u64(&self) -> Option<u64> {
        if self.nvml_return != NVML_SUCCESS {
            return None;
        }
        match self.value_type {
            NVML_VALUE_TYPE_UNSIGNED_LONG_LONG => Some(self.value),
            NVML_VALUE_TYPE_UNSIGNED_INT => Some(self.value & 0xffff_ffff),
            _ => Some(self.value),
        }
    }
}

type InitFn = unsafe extern "C" fn() -> NvmlReturn;
type ByUuidFn = unsafe extern "C" fn(*const c_char, *mut NvmlDevice) -> NvmlReturn;
type FieldValuesFn = unsafe extern "C" fn(NvmlDevice, c_int, *mut FieldValue) -> NvmlReturn;
type UtilizationFn = unsafe extern "C" fn(NvmlDevice, *mut Utilization) -> NvmlReturn;
type MemoryFn = unsafe extern "C" fn(NvmlDevice, *mut Memory) -> NvmlReturn;
/// `nvmlDeviceGetClockInfo` and `nvmlDeviceGetTemperature`: an enum
/// selector and an `unsigned int` result.
type SelectUintFn = unsafe extern "C" fn(NvmlDevice, c_int, *mut c_uint) -> NvmlReturn;
type UintFn = unsafe extern "C" fn(NvmlDevice, *mut c_uint) -> NvmlReturn;

/// The device queries of GPU metrics; each `None` where the library
/// lacks the symbol.
struct Queries {
    utilization: Option<UtilizationFn>,
    memory: Option<MemoryFn>,
    clock: Option<SelectUintFn>,
    power: Option<UintFn>,
    temperature: Option<SelectUintFn>,
}

/// The NVML library, initialized.
pub struct Nvml {
    _lib: Library,
    by_uuid: ByUuidFn,
    field_values: FieldValuesFn,
    queries: Queries,
}

/// Why NVML is not available.
#[derive(Debug)]
pub enum NvmlError {
    /// The library could not be opened or lacks a function.
    Load(libloading::Error),
    /// An NVML call failed with this `nvmlReturn_t`.
    Call(&'static str, NvmlReturn),
}

impl std::fmt::Display for NvmlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NvmlError::Load(e) => write!(f, "cannot load libnvidia-ml.so.1: {e}"),
            NvmlError::Call(name, code) => write!(f, "{name} failed with NVML error {code}"),
        }
    }
}

impl std::error::Error for NvmlError {}

/// A GPU as NVML knows it.
#[derive(Debug, Clone, Copy)]
pub struct Device(NvmlDevice);

// SAFETY: an nvmlDevice_t is an opaque handle that NVML documents as usable
// from any thread.
unsafe impl Send for Device {}

impl Nvml {
    /// Opens `libnvidia-ml.so.1` and calls `nvmlInit_v2`.
    pub fn open() -> Result<Nvml, NvmlError> {
        // SAFETY: loading NVML runs its initializers, which have no
        // preconditions; the library stays loaded while `Nvml` lives.
        let lib =
            unsafe { Library::open(Some("libnvidia-ml.so.1"), RTLD_NOW | RTLD_LOCAL) }.map_err(NvmlError::Load)?;
        // SAFETY: the types are those nvml.h declares for these symbols.
        let (init, by_uuid, field_values) = unsafe {
            (
                *lib.get::<InitFn>(b"nvmlInit_v2\0").map_err(NvmlError::Load)?,
                *lib.get::<ByUuidFn>(b"nvmlDeviceGetHandleByUUID\0").map_err(NvmlError::Load)?,
                *lib.get::<FieldValuesFn>(b"nvmlDeviceGetFieldValues\0").map_err(NvmlError::Load)?,
            )
        };
        // SAFETY: the types are those nvml.h declares for these symbols
        // (clock and temperature selectors are C enums, passed as int).
        let queries = unsafe {
            Queries {
                utilization: lib.get::<UtilizationFn>(b"nvmlDeviceGetUtilizationRates\0").ok().map(|f| *f),
                memory: lib.get::<MemoryFn>(b"nvmlDeviceGetMemoryInfo\0").ok().map(|f| *f),
                clock: lib.get::<SelectUintFn>(b"nvmlDeviceGetClockInfo\0").ok().map(|f| *f),
                power: lib.get::<UintFn>(b"nvmlDeviceGetPowerUsage\0").ok().map(|f| *f),
                temperature: lib.get::<SelectUintFn>(b"nvmlDeviceGetTemperature\0").ok().map(|f| *f),
            }
        };
        // SAFETY: nvmlInit_v2 takes no arguments; calling it more than once
        // is allowed (NVML counts references).
        let rc = unsafe { init() };
        if rc != NVML_SUCCESS {
            return Err(NvmlError::Call("nvmlInit_v2", rc));
        }
        Ok(Nvml { _lib: lib, by_uuid, field_values, queries })
    }

    /// The device with this UUID (`GPU-xxxxxxxx-xxxx-...`).
    pub fn device_by_uuid(&self, uuid: &str) -> Result<Device, NvmlError> {
        let c = CString::new(uuid).map_err(|_| NvmlError::Call("nvmlDeviceGetHandleByUUID", -1))?;
        let mut dev: NvmlDevice = std::ptr::null_mut();
        // SAFETY: `c` is a NUL-terminated string and `dev` a writable handle.
        let rc = unsafe { (self.by_uuid)(c.as_ptr(), &mut dev) };
        if rc == NVML_SUCCESS { Ok(Device(dev)) } else { Err(NvmlError::Call("nvmlDeviceGetHandleByUUID", rc)) }
    }

    /// Reads the given fields of `device`: `fields` holds (field id, scope
    /// id) pairs; the values come back in the same order.
    pub fn field_values(&self, device: Device, fields: &[(u32, u32)]) -> Result<Vec<FieldValue>, NvmlError> {
        let mut values: Vec<FieldValue> = fields
            .iter()
            .map(|&(field_id, scope_id)| FieldValue { field_id, scope_id, ..FieldValue::default() })
            .collect();
        // SAFETY: `values` holds `len` initialized elements of the layout
        // NVML expects; NVML writes only within them.
        let rc = unsafe { (self.field_values)(device.0, values.len() as c_int, values.as_mut_ptr()) };
        if rc == NVML_SUCCESS { Ok(values) } else { Err(NvmlError::Call("nvmlDeviceGetFieldValues", rc)) }
    }
}

impl Nvml {
    /// `nvmlDeviceGetUtilizationRates`.
    pub fn utilization(&self, device: Device) -> Result<Utilization, NvmlError> {
        const NAME: &str = "nvmlDeviceGetUtilizationRates";
        let f = self.queries.utilization.ok_or(NvmlError::Call(NAME, NVML_ERROR_NOT_SUPPORTED))?;
        let mut u = Utilization::default();
        // SAFETY: `u` is a writable nvmlUtilization_t.
        check(NAME, unsafe { f(device.0, &mut u) }).map(|()| u)
    }

    /// `nvmlDeviceGetMemoryInfo`.
    pub fn memory(&self, device: Device) -> Result<Memory, NvmlError> {
        const NAME: &str = "nvmlDeviceGetMemoryInfo";
        let f = self.queries.memory.ok_or(NvmlError::Call(NAME, NVML_ERROR_NOT_SUPPORTED))?;
        let mut m = Memory::default();
        // SAFETY: `m` is a writable nvmlMemory_t (the version 1 layout the
        // unsuffixed symbol takes).
        check(NAME, unsafe { f(device.0, &mut m) }).map(|()| m)
    }

    /// `nvmlDeviceGetClockInfo(NVML_CLOCK_SM)`: MHz.
    pub fn sm_clock(&self, device: Device) -> Result<u32, NvmlError> {
        const NAME: &str = "nvmlDeviceGetClockInfo";
        let f = self.queries.clock.ok_or(NvmlError::Call(NAME, NVML_ERROR_NOT_SUPPORTED))?;
        let mut v: c_uint = 0;
        // SAFETY: a valid clock type and a writable unsigned int.
        check(NAME, unsafe { f(device.0, NVML_CLOCK_SM, &mut v) }).map(|()| v)
    }

    /// `nvmlDeviceGetPowerUsage`: milliwatts.
    pub fn power(&self, device: Device) -> Result<u32, NvmlError> {
        const NAME: &str = "nvmlDeviceGetPowerUsage";
        let f = self.queries.power.ok_or(NvmlError::Call(NAME, NVML_ERROR_NOT_SUPPORTED))?;
        let mut v: c_uint = 0;
        // SAFETY: a writable unsigned int.
        check(NAME, unsafe { f(device.0, &mut v) }).map(|()| v)
    }

    /// `nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)`: degrees Celsius.
    pub fn temperature(&self, device: Device) -> Result<u32, NvmlError> {
        const NAME: &str = "nvmlDeviceGetTemperature";
        let f = self.queries.temperature.ok_or(NvmlError::Call(NAME, NVML_ERROR_NOT_SUPPORTED))?;
        let mut v: c_uint = 0;
        // SAFETY: a valid sensor type and a writable unsigned int.
        check(NAME, unsafe { f(device.0, NVML_TEMPERATURE_GPU, &mut v) }).map(|()| v)
    }
}

fn check(name: &'static str, rc: NvmlReturn) -> Result<(), NvmlError> {
    if rc == NVML_SUCCESS { Ok(()) } else { Err(NvmlError::Call(name, rc)) }
}

impl NvmlError {
    /// Whether the GPU (or the library) does not offer the query.
    pub fn not_supported(&self) -> bool {
        matches!(self, NvmlError::Call(_, NVML_ERROR_NOT_SUPPORTED))
    }
}

/// The sizes nvml.h's structures have.
const _: () = assert!(std::mem::size_of::<Utilization>() == 8);
const _: () = assert!(std::mem::size_of::<Memory>() == 24);

/// The size NVML's `nvmlFieldValue_t` has on 64-bit Linux.
const _: () = assert!(std::mem::size_of::<FieldValue>() == 40);
/// `scopeId` is a C `unsigned int`.
const _: () = assert!(std::mem::size_of::<c_uint>() == 4);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_by_type() {
        let mut v =
            FieldValue { value_type: NVML_VALUE_TYPE_UNSIGNED_INT, value: 0xdead_0000_0012, ..Default::default() };
        assert_eq!(v.as_u64(), Some(0x12));
        v.value_type = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        assert_eq!(v.as_u64(), Some(0xdead_0000_0012));
        v.nvml_return = 3;
        assert_eq!(v.as_u64(), None);
    }

    #[test]
    fn a_machine_without_a_driver_gets_an_error() {
        if std::path::Path::new("/dev/nvidiactl").exists() {
            return;
        }
        assert!(Nvml::open().is_err());
    }
}
