//! Thin calls of the driver functions relok calls through
//! `cudarc::driver::sys` itself, in the manner of cudarc's own
//! `cudarc::driver::result` (which the rest of the cuda device uses for
//! every other driver function): one function per driver call, returning
//! what the call writes through its out-pointers, and a failure as a
//! [`DeviceError`] naming the call ([`driver`]) — or as the driver's own
//! error where a failure is expected and its message never read. Each
//! links the driver API's documentation of its call; each `unsafe fn`
//! says in `# Safety` what its caller must uphold.

use crate::error::DeviceError;
use cudarc::driver::result::DriverError;
use cudarc::driver::sys;
use std::ffi::{CStr, c_void};

/// The driver's error as a [`DeviceError`] naming the failed `call`.
pub(super) fn driver(call: &'static str) -> impl FnOnce(DriverError) -> DeviceError {
    move |e| DeviceError::Driver { call, message: format!("{e:?}") }
}

/// Whether the driver library (libcuda) can be loaded: cudarc's
/// `sys::is_culib_present`, which only tries to open it; no driver
/// function is called.
pub(super) fn library_present() -> bool {
    // SAFETY: only tries to open the driver library; no call is made.
    unsafe { sys::is_culib_present() }
}

/// The CUDA version of the driver (e.g. 13000 for CUDA 13.0).
///
/// See [cuDriverGetVersion](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__VERSION.html#group__CUDA__VERSION_1g8b7a10395392e049006e61bcdc8ebe71).
pub(super) fn driver_get_version() -> Result<i32, DeviceError> {
    let mut version = 0;
    // SAFETY: a valid out-pointer to an int.
    unsafe { sys::cuDriverGetVersion(&mut version) }.result().map_err(driver("cuDriverGetVersion"))?;
    Ok(version)
}

/// The device handle of GPU `ordinal`; an ordinal past the last GPU is an
/// error (the driver's own: relok calls it only to fail, see
/// `ready_error_path`).
///
/// See [cuDeviceGet](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html#group__CUDA__DEVICE_1g8bdd1cc7201304b01357b8034f6587cb).
pub(super) fn device_get(ordinal: i32) -> Result<sys::CUdevice, DriverError> {
    let mut device = 0;
    // SAFETY: a valid out-pointer; a failed call writes nothing.
    unsafe { sys::cuDeviceGet(&mut device, ordinal) }.result()?;
    Ok(device)
}

/// Loads `function` onto the GPU now rather than at its first launch
/// (under lazy loading, the default since CUDA 12.2).
///
/// See [cuFuncLoad](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html#group__CUDA__EXEC_1g3b67024e8875bfd155534785708093ab).
///
/// # Safety
///
/// `function` is a function of a module that is loaded (not unloaded
/// during the call).
pub(super) unsafe fn func_load(function: sys::CUfunction) -> Result<(), DeviceError> {
    // SAFETY: by the caller's contract, `function` is a live function.
    unsafe { sys::cuFuncLoad(function) }.result().map_err(driver("cuFuncLoad"))
}

/// Registers per thread of `function`'s machine code
/// (`CU_FUNC_ATTRIBUTE_NUM_REGS`; under lazy loading the driver loads the
/// function first).
///
/// See [cuFuncGetAttribute](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html#group__CUDA__EXEC_1g5e92a1b0d8d1b82cb00dcfb2de15961b).
///
/// # Safety
///
/// `function` is a function of a module that is loaded (not unloaded
/// during the call), and its context is bound to the thread.
pub(super) unsafe fn func_num_regs(function: sys::CUfunction) -> Result<u32, DeviceError> {
    let attribute = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS;
    let mut regs = 0;
    // SAFETY: a function of a live module with its context bound (the
    // caller's contract); a valid out-pointer.
    unsafe { sys::cuFuncGetAttribute(&mut regs, attribute, function) }
        .result()
        .map_err(driver("cuFuncGetAttribute"))?;
    u32::try_from(regs).map_err(|_| DeviceError::Driver {
        call: "cuFuncGetAttribute",
        message: format!("a negative register count ({regs})"),
    })
}

/// The offset and size in bytes of parameter `index` of `function`; an
/// error (the driver's own: relok asks one past the last on purpose)
/// when it has no such parameter. CUDA 12.4 and later.
///
/// See [cuFuncGetParamInfo](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html#group__CUDA__EXEC_1g6874b82bcf2803902085645e46e0ca0e).
///
/// # Safety
///
/// `function` is a function of a module that is loaded (not unloaded
/// during the call).
pub(super) unsafe fn func_get_param_info(
    function: sys::CUfunction,
    index: usize,
) -> Result<(usize, usize), DriverError> {
    let (mut offset, mut size) = (0usize, 0usize);
    // SAFETY: a function of a live module (the caller's contract); valid
    // out-pointers.
    unsafe { sys::cuFuncGetParamInfo(function, index, &mut offset, &mut size) }.result().map(|()| (offset, size))
}

/// A new pending linker invocation, with no options, for the GPU of the
/// context bound to the thread; destroyed with [`link_destroy`].
///
/// See [cuLinkCreate](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html#group__CUDA__MODULE_1g86ca4052a2fab369cb943523908aa80d).
pub(super) fn link_create() -> Result<sys::CUlinkState, DeviceError> {
    let mut state: sys::CUlinkState = std::ptr::null_mut();
    // SAFETY: no options; `state` is a valid out-pointer.
    unsafe { sys::cuLinkCreate_v2(0, std::ptr::null_mut(), std::ptr::null_mut(), &mut state) }
        .result()
        .map_err(driver("cuLinkCreate"))?;
    Ok(state)
}

/// Adds `data`, an input of `kind` named `name` in the linker's messages,
/// to the pending link `state`, with no options. The driver keeps no
/// reference to `data` or `name` after the call.
///
/// See [cuLinkAddData](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html#group__CUDA__MODULE_1g3ebcd2ccb772ba9c120937a2d2831b77).
///
/// # Safety
///
/// `state` is a live link (from [`link_create`], not yet given to
/// [`link_destroy`]); PTX `data` ends with a NUL byte.
pub(super) unsafe fn link_add_data(
    state: sys::CUlinkState,
    kind: sys::CUjitInputType,
    data: &[u8],
    name: &CStr,
) -> Result<(), DeviceError> {
    // SAFETY: `state` is live (the caller's contract); the data pointer and
    // length describe `data` and the name is a C string, both alive for
    // the call; no options.
    unsafe {
        sys::cuLinkAddData_v2(
            state,
            kind,
            data.as_ptr().cast_mut().cast(),
            data.len(),
            name.as_ptr(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
    .result()
    .map_err(driver("cuLinkAddData"))
}

/// Completes the pending link `state`: the address and length in bytes of
/// the linked image, which `state` owns until [`link_destroy`] (the
/// address may be null).
///
/// See [cuLinkComplete](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html#group__CUDA__MODULE_1g818fcd84a4150a997c0bba76fef4e716).
///
/// # Safety
///
/// `state` is a live link (from [`link_create`], not yet given to
/// [`link_destroy`]).
pub(super) unsafe fn link_complete(state: sys::CUlinkState) -> Result<(*mut c_void, usize), DeviceError> {
    let (mut out, mut size): (*mut c_void, usize) = (std::ptr::null_mut(), 0);
    // SAFETY: `state` is live (the caller's contract); out-pointers are
    // valid.
    unsafe { sys::cuLinkComplete(state, &mut out, &mut size) }.result().map_err(driver("cuLinkComplete"))?;
    Ok((out, size))
}

/// Destroys the link `state`, and with it the image [`link_complete`]
/// returned.
///
/// See [cuLinkDestroy](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html#group__CUDA__MODULE_1g01b7ae2a34047b05716969af245ce2d9).
///
/// # Safety
///
/// `state` is a live link (from [`link_create`]), destroyed once: neither
/// it nor its image is used after the call.
pub(super) unsafe fn link_destroy(state: sys::CUlinkState) -> Result<(), DeviceError> {
    // SAFETY: by the caller's contract.
    unsafe { sys::cuLinkDestroy(state) }.result().map_err(driver("cuLinkDestroy"))
}

/// Copies `src` to device memory at `dst`, enqueued on `stream` (null: the
/// legacy stream). From pageable memory the driver may return before it
/// has read `src`: CUDA's documentation says only that such a copy "might
/// be synchronous".
///
/// See [cuMemcpyHtoDAsync](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html#group__CUDA__MEM_1g1572263fe2597d7ba4f6964597a354a3).
///
/// # Safety
///
/// `dst .. dst + src.len()` lies in device memory of the context bound to
/// the thread, which nothing else writes until the copy is done; `stream`
/// is a live stream of that context, or null; the bytes of `src` stay
/// alive and unchanged until the copy has run (the stream has passed it),
/// not only until the call returns.
pub(super) unsafe fn memcpy_htod_async(
    dst: sys::CUdeviceptr,
    src: &[u8],
    stream: sys::CUstream,
) -> Result<(), DeviceError> {
    // SAFETY: by the caller's contract; the pointer and length describe
    // `src`.
    unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.as_ptr().cast(), src.len(), stream) }
        .result()
        .map_err(driver("cuMemcpyHtoDAsync"))
}
