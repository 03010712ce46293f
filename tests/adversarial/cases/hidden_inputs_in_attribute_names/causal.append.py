# Attack (appended to a correct causal.py): CausalAttention.forward reads an attribute whose name
# spells out a fingerprint of its input (self.leak0 .. self.leak127, every one written in this
# source, below). The AttributeError names it; a hidden check's diagnosis must name only
# attributes of the specification.
# self.leak0 self.leak1 self.leak2 self.leak3 self.leak4 self.leak5 self.leak6 self.leak7
# self.leak8 self.leak9 self.leak10 self.leak11 self.leak12 self.leak13 self.leak14 self.leak15
# self.leak16 self.leak17 self.leak18 self.leak19 self.leak20 self.leak21 self.leak22
# self.leak23 self.leak24 self.leak25 self.leak26 self.leak27 self.leak28 self.leak29
# self.leak30 self.leak31 self.leak32 self.leak33 self.leak34 self.leak35 self.leak36
# self.leak37 self.leak38 self.leak39 self.leak40 self.leak41 self.leak42 self.leak43
# self.leak44 self.leak45 self.leak46 self.leak47 self.leak48 self.leak49 self.leak50
# self.leak51 self.leak52 self.leak53 self.leak54 self.leak55 self.leak56 self.leak57
# self.leak58 self.leak59 self.leak60 self.leak61 self.leak62 self.leak63 self.leak64
# self.leak65 self.leak66 self.leak67 self.leak68 self.leak69 self.leak70 self.leak71
# self.leak72 self.leak73 self.leak74 self.leak75 self.leak76 self.leak77 self.leak78
# self.leak79 self.leak80 self.leak81 self.leak82 self.leak83 self.leak84 self.leak85
# self.leak86 self.leak87 self.leak88 self.leak89 self.leak90 self.leak91 self.leak92
# self.leak93 self.leak94 self.leak95 self.leak96 self.leak97 self.leak98 self.leak99
# self.leak100 self.leak101 self.leak102 self.leak103 self.leak104 self.leak105 self.leak106
# self.leak107 self.leak108 self.leak109 self.leak110 self.leak111 self.leak112 self.leak113
# self.leak114 self.leak115 self.leak116 self.leak117 self.leak118 self.leak119 self.leak120
# self.leak121 self.leak122 self.leak123 self.leak124 self.leak125 self.leak126 self.leak127


def _leaky_forward(self, x):
    fingerprint = int(float(x.double().abs().sum()) * 1000) % 128
    return getattr(self, f"leak{fingerprint}")


CausalAttention.forward = _leaky_forward
