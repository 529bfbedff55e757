/* Wine 8 (Debian 12's) lacks bcryptprimitives.dll, which Windows has had
 * since Windows 10 and Rust's standard library asks for its randomness
 * (ProcessPrng). scripts/test builds this stand-in into the Wine prefix it
 * runs the Windows build in, over advapi32's RtlGenRandom. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG part = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, part))
            return FALSE;
        data += part;
        length -= part;
    }
    return TRUE;
}
