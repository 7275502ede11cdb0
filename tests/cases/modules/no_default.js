// An entry module without a default export has the value undefined.
export const x = 1;
