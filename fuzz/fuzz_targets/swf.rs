//! The SWF converter: any bytes, as a trace.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = fairflow_ingest::swf::convert_swf(data);
});
