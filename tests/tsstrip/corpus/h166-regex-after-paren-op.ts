const s = "a1"; return (s).match(/\d/)![0]
