//! NVLink bridges between PCIe cards (`bridge=`): links go GPU to GPU, as on real bridged cards.

// The C ABI under test: raw NVML symbols called through pointers this test owns.
#![allow(unsafe_code)]

mod common;

use nvml_wrapper::enum_wrappers::device::{P2pCapabilitiesIndex, P2pStatus};
use nvml_wrapper::Device;

fn device(i: u32) -> Device<'static> {
    common::shared("gpus=4,profile=a100-pcie,bridge=0-1:12;2-3:4,frozen=10")
        .device_by_index(i)
        .expect("device")
}

fn remote_device_type(d: &Device, link: u32) -> (u32, u32) {
    let sym = d
        .nvml()
        .lib()
        .nvmlDeviceGetNvLinkRemoteDeviceType
        .as_ref()
        .expect("exported");
    let mut kind = 99;
    let rc = unsafe { sym(d.handle(), link, &mut kind) };
    (rc, kind)
}

#[test]
fn bridged_links_report_the_other_gpu() {
    let (zero, one, two) = (device(0), device(1), device(2));
    let one_bus = one.pci_info().expect("pci").bus_id;
    for l in 0..12 {
        let link = zero.link_wrapper_for(l);
        assert!(link.is_active().expect("state"));
        assert_eq!(link.version().expect("version"), 4, "NVLink 3.0");
        assert_eq!(
            remote_device_type(&zero, l),
            (0, 0),
            "NVML_NVLINK_DEVICE_TYPE_GPU"
        );
        assert_eq!(link.remote_pci_info().expect("remote").bus_id, one_bus);
    }
    assert!(!two.link_wrapper_for(4).is_active().expect("state"));
    assert_eq!(
        zero.p2p_status(&one, P2pCapabilitiesIndex::NvLink)
            .expect("p2p"),
        P2pStatus::Ok
    );
    assert_eq!(
        zero.p2p_status(&two, P2pCapabilitiesIndex::NvLink)
            .expect("p2p"),
        P2pStatus::NotSupported,
        "no bridge between cards 0 and 2"
    );
}
