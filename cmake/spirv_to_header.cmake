# cmake -DINPUT=x.spv -DOUTPUT=x.inc -DNAME=x -P spirv_to_header.cmake
# Writes the SPIR-V words of INPUT as `inline constexpr std::uint32_t NAME[] = {...};`: inline, so
# every translation unit that includes it sees one array at one address (pipelines are cached by it).
file(READ ${INPUT} hex HEX)
# SPIR-V is little-endian words: bytes b0 b1 b2 b3 make 0xb3b2b1b0.
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${hex}")
file(WRITE ${OUTPUT} "inline constexpr std::uint32_t ${NAME}[] = {${words}};\n")
