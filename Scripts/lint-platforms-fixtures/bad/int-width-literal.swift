// expect: int-width-literal
// Does not compile where Int is 32 bits (arm64_32 watchOS).
let spillThreshold: Int = 1 << 40
