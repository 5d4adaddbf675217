//! Level-based fair-share (Slurm 14.11pre5): the blog example's bit layout
//! (`LevelLayout`). The hand-computed bucket values, the zero-shares quirk,
//! `FairShare=parent`, levels deeper than `PriorityLevels` and the rank
//! factors run on both engines from data:
//! `crates/engine/tests/cases/level_based_*.toml`.

use fairflow_model::formula::LevelLayout;

#[test]
fn the_blog_example_bit_layout() {
    // PriorityLevels=4: 16-bit buckets, no unused bits, bucket_max 65535.
    let layout = LevelLayout::new(4);
    assert_eq!(layout.bucket_width_bits, 16);
    assert_eq!(layout.unused_bits, 0);
    assert_eq!(layout.bucket_max, 65535);
    // College 0xAAAA, department 0x1234, faculty 0x7777, user 0xCCCC.
    let life_sciences = layout.place(0xAAAA, 0);
    let biology = layout.place(0x1234, 1);
    let dr_bob = layout.place(0x7777, 2);
    let grad_student = layout.place(0xCCCC, 3);
    assert_eq!(life_sciences, 0xAAAA_0000_0000_0000);
    assert_eq!(biology, 0x0000_1234_0000_0000);
    assert_eq!(dr_bob, 0x0000_0000_7777_0000);
    assert_eq!(grad_student, 0x0000_0000_0000_CCCC);
    assert_eq!(
        life_sciences | biology | dr_bob | grad_student,
        0xAAAA_1234_7777_CCCC
    );
    // A fifth level does not fit: it adds nothing.
    assert_eq!(layout.place(0xFFFF, 4), 0);
}
