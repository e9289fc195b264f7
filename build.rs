//! Build script: PyO3's `Py_3_*` / `Py_LIMITED_API` cfgs for this crate, so that code reading
//! CPython's string layout directly (`wsgi::app_head::latin1_bytes`) is compiled only where that
//! layout is public API (not under the stable ABI of the abi3 wheel, not on 3.14's changed
//! macros).
fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
