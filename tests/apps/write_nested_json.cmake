# Writes FILE: LEVELS nested JSON arrays, a file no launchwatch summary can be, which reading
# recursively would overflow the stack on.
string(REPEAT "[" ${LEVELS} open)
string(REPEAT "]" ${LEVELS} close)
file(WRITE "${FILE}" "${open}${close}\n")
