//! A PCI address as the kernel log and NVML write it, compared and shown the way gpudeck shows
//! GPUs (`00000000:3A:00.0`, NVML's form).

use std::fmt;

use serde::{Serialize, Serializer};

/// Domain, bus, device and function of a PCI device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddress {
    pub domain: u32,
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

impl PciAddress {
    /// Reads `00000000:3A:00.0` (NVML), `0000:3a:00.0` (sysfs), `PCI:0000:3a:00` and `0000:01:00`
    /// (the driver's log lines, which leave out the function: 0). None for anything else.
    pub fn parse(text: &str) -> Option<PciAddress> {
        let text = text.trim();
        let text = text.strip_prefix("PCI:").unwrap_or(text);
        let (rest, function) = match text.rsplit_once('.') {
            Some((rest, f)) => (rest, u8::from_str_radix(f, 16).ok().filter(|f| *f < 8)?),
            None => (text, 0),
        };
        let mut parts = rest.split(':');
        let (domain, bus, device) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || domain.is_empty() || domain.len() > 8 {
            return None;
        }
        if bus.len() != 2 || device.len() != 2 {
            return None;
        }
        Some(PciAddress {
            domain: u32::from_str_radix(domain, 16).ok()?,
            bus: u8::from_str_radix(bus, 16).ok()?,
            device: u8::from_str_radix(device, 16).ok().filter(|d| *d < 32)?,
            function,
        })
    }
}

/// NVML's form, which `gpudeck gpus` shows: `00000000:3A:00.0`.
impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:08X}:{:02X}:{:02X}.{:X}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

impl Serialize for PciAddress {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_one_address_is_the_same_address() {
        let nvml = PciAddress::parse("00000000:3A:00.0").unwrap();
        for form in [
            "PCI:0000:3a:00",
            "0000:3a:00",
            "0000:3A:00.0",
            " 00000000:3a:00.0 ",
        ] {
            assert_eq!(PciAddress::parse(form), Some(nvml), "{form}");
        }
        assert_eq!(nvml.to_string(), "00000000:3A:00.0");
        assert_eq!(
            PciAddress::parse("PCI:0008:01:00").unwrap().to_string(),
            "00000008:01:00.0"
        );
        assert_ne!(PciAddress::parse("0000:3a:00.1"), Some(nvml));
    }

    #[test]
    fn anything_else_is_no_address() {
        for bad in [
            "",
            "3a:00",
            "0000:3a",
            "0000:3g:00",
            "0000:3a:00.8",
            "0000:3a:00:00",
            "gpu",
        ] {
            assert_eq!(PciAddress::parse(bad), None, "{bad}");
        }
    }
}
