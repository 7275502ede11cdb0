const b: bigint = 10n; return (b * 2n).toString()
