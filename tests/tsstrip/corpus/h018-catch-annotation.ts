try { throw new RangeError("r") } catch (e: unknown) { return (e as RangeError).name }
