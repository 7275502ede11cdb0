type Head<T> = T extends `${infer H}${infer R}` ? [H, R] : never; return "h"
