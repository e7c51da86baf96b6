"""How a word sounds, in the phones pocketsphinx's en-US model hears: eSpeak NG's phonemes
(it phonemizes any word, a made-up tool word such as "greeter" too) mapped from IPA to the
ARPAbet of CMUdict, which that model's dictionary is written in."""

from __future__ import annotations

import ctypes
import functools
import re

from .synthesis import espeak

_IPA_MODE = 0x02  # espeakPHONEMES_IPA
_SEPARATOR = ord("_") << 8  # a separator between phonemes: bits 8-15 of phonememode
_CHARS_UTF8 = 1
_STRESS_AND_MARKS = re.compile("[ˈˌ\u0329\u02b2]")  # stress, syllabic and palatal marks

_ARPABET = {
    # consonants
    "p": "P",
    "b": "B",
    "t": "T",
    "d": "D",
    "k": "K",
    "ɡ": "G",
    "g": "G",
    "tʃ": "CH",
    "dʒ": "JH",
    "f": "F",
    "v": "V",
    "θ": "TH",
    "ð": "DH",
    "s": "S",
    "z": "Z",
    "ʃ": "SH",
    "ʒ": "ZH",
    "h": "HH",
    "m": "M",
    "n": "N",
    "ŋ": "NG",
    "l": "L",
    "ɹ": "R",
    "r": "R",
    "w": "W",
    "ʍ": "W",
    "j": "Y",
    "ɾ": "T",  # American English's flap: CMUdict writes the t it stands for
    "ʔ": "T",
    "x": "K",
    # vowels, American and British
    "ə": "AH",
    "ʌ": "AH",
    "ɐ": "AH",
    "ɚ": "ER",
    "ɜː": "ER",
    "ɜ": "ER",
    "ɝ": "ER",
    "æ": "AE",
    "a": "AE",
    "aː": "AA",
    "ɑː": "AA",
    "ɑ": "AA",
    "ɒ": "AA",
    "ɔː": "AO",
    "ɔ": "AO",
    "ʊ": "UH",
    "uː": "UW",
    "u": "UW",
    "ɛ": "EH",
    "e": "EH",
    "ɪ": "IH",
    "ᵻ": "IH",
    "i": "IY",
    "iː": "IY",
    "eɪ": "EY",
    "aɪ": "AY",
    "aʊ": "AW",
    "ɔɪ": "OY",
    "oʊ": "OW",
    "əʊ": "OW",
    "o": "OW",
    "oː": "OW",
    # r-coloured and centring diphthongs
    "eə": "EH R",
    "ɛɹ": "EH R",
    "ɪə": "IH R",
    "ɪɹ": "IH R",
    "ʊə": "UH R",
    "ʊɹ": "UH R",
    "ɔːɹ": "AO R",
    "ɔɹ": "AO R",
    "ɑːɹ": "AA R",
    "ɑɹ": "AA R",
    "iə": "IY AH",
    "aɪə": "AY ER",
    "aʊə": "AW ER",
}
_LONGEST = max(len(ipa) for ipa in _ARPABET)


def pronunciation(word: str) -> str:
    """``word`` as eSpeak NG's American voice says it, in ARPAbet phones separated by spaces
    (``greeter`` -> ``G R IY T ER``); "" when eSpeak gives it no phoneme pocketsphinx knows."""
    return arpabet(_ipa(word.lower()))


def arpabet(ipa: str) -> str:
    """eSpeak's IPA (phonemes separated by ``_``, words by spaces) as ARPAbet phones: each
    phoneme by its longest known spelling; a symbol with no ARPAbet sound is left out."""
    phones: list[str] = []
    for phoneme in re.split(r"[_\s]+", _STRESS_AND_MARKS.sub("", ipa)):
        rest = phoneme
        while rest:
            for size in range(min(_LONGEST, len(rest)), 0, -1):
                if rest[:size] in _ARPABET:
                    phones.extend(_ARPABET[rest[:size]].split())
                    rest = rest[size:]
                    break
            else:
                rest = rest[1:]
    return " ".join(phones)


@functools.lru_cache(maxsize=4096)
def _ipa(text: str) -> str:
    """eSpeak NG's IPA for ``text`` in its American voice (the voice the model was trained on
    is American English)."""
    data = ctypes.create_string_buffer(text.encode("utf-8"))
    cursor = ctypes.c_void_p(ctypes.addressof(data))
    clauses: list[str] = []
    with espeak() as engine:
        lib = engine.lib
        lib.espeak_SetVoiceByName(b"en-us")
        # eSpeak moves the cursor past each clause it phonemized, and sets it NULL at the end
        while cursor.value:
            phonemes = lib.espeak_TextToPhonemes(
                ctypes.byref(cursor), _CHARS_UTF8, _IPA_MODE | _SEPARATOR
            )
            if phonemes:
                clauses.append(phonemes.decode("utf-8"))
    return " ".join(clauses)
