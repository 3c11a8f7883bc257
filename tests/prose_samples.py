"""Prose in many languages and scripts, written for the tests (a few sentences each, composed here:
no benchmark's text): what a good text layer says, which `text_quality.score` must not judge
garbage (issue 38: Icelandic prose scored 0.855-0.899 and its page went to OCR)."""

PROSE = {
    "icelandic": ("Á Íslandi búa tæplega fjögur hundruð þúsund manns. Þjóðin talar íslensku, mál sem á "
                  "rætur í fornnorrænu og hefur lítið breyst síðan á þjóðveldisöld. Í ágúst eru nætur "
                  "bjartar, en á veturna er sólin lágt á lofti og dagarnir stuttir. Bændur ráða því "
                  "hvenær féð fer á fjall, og í réttum í september hittast sveitungar og draga fé í "
                  "dilka. Þótt veðrið sé óútreiknanlegt þykir flestum gott að búa hér; fáir vilja "
                  "flytja burt. Ég á þér að þakka þá góðu ráðgjöf sem þú gafst mér í fyrra."),
    "icelandic_dialogue": ("„Hvert ætlar þú?“ spurði Þórður. „Ég ætla út á bát,“ svaraði hún, „og þú mátt koma "
                           "með ef þú vilt.“ Þá hló hann og sagði að hann væri ekki vanur sjónum. Þó fór hann "
                           "með henni, því að veðrið var gott og sólin skein á hafið. Í bátnum sátu þau lengi og "
                           "töluðu um þjóð sína, um íbúð í bænum og um það hvernig þau ættu að þýða gömlu "
                           "sögurnar. „Þú ert góð,“ sagði hann þá. Á leiðinni heim sáu þau hvali í firðinum."),
    "faroese": ("Í Føroyum eru átjan oyggjar, og á flestum teirra búgva fólk. Veðrið er ofta vátt og "
                "broytiligt, men summarnáttirnar eru ljósar og vakrar. Á várið koma fuglarnir aftur "
                "til bjargið, og børnini ganga á fjall at síggja teir."),
    "czech": ("V malé vesnici pod horami žil starý kovář, který každé ráno vstával před úsvitem. "
              "Jeho dílna voněla dřevěným uhlím a železem. Děti z okolí k němu chodily, aby se "
              "dívaly, jak z rozžhaveného kovu vznikají podkovy, hřebíky a nože. Říkal jim, že "
              "trpělivost je důležitější než síla."),
    "polish": ("W starym młynie nad rzeką mieszkał kot, który łowił myszy tylko w czwartki. "
               "Gospodyni śmiała się, że zwierzę ma własny kalendarz. Zimą, gdy śnieg zasypywał "
               "drogę, młynarz czytał dzieciom książki przy piecu, a żona piekła chleb z mąki "
               "żytniej."),
    "turkish": ("Küçük bir köyde yaşayan yaşlı bir öğretmen, her sabah çocuklara üç şey öğretirdi: "
                "sabır, dürüstlük ve çalışkanlık. Öğrenciler onu çok severdi; çünkü o, güçlü bir "
                "sesle değil, gülümseyerek konuşurdu. Köyün çeşmesinin başında oturur, geçen "
                "yolculara çay ikram ederdi. Üçüncü gün küçük kızı da gelip ona yardım etti."),
    "vietnamese": ("Buổi sáng ở làng quê thường bắt đầu rất sớm. Người nông dân ra đồng khi trời còn mờ "
                   "sương, còn trẻ em thì chuẩn bị sách vở để đến trường. Bà tôi hay kể rằng ngày xưa "
                   "con đường này chỉ là lối mòn nhỏ giữa những cánh đồng lúa xanh mướt. Ý kiến của ông "
                   "ấy là đúng."),
    "french": ("L’été dernier, nous sommes allés à la côte d’Azur où l’on a mangé des crêpes près de "
               "la plage. C’était très agréable : la mer était calme et l’air sentait le sel. "
               "Qu’est-ce qu’on peut demander de plus à des vacances ? « Rien », a répondu ma sœur, "
               "déjà à l’eau."),
    "portuguese": ("A cidade é pequena, mas a praça é sempre cheia de gente à tarde. O café da esquina é "
                   "conhecido pela broa de milho e pelo pão de queijo. É lá que os avós se encontram "
                   "para conversar sobre o tempo, as colheitas e a saúde dos netos."),
    "catalan": ("La col·lecció del museu inclou pintures del segle dinou i una il·lustració molt "
                "antiga. L’exposició és oberta tots els dies de la setmana, i l’entrada és gratuïta "
                "per als nens. Al pati hi ha una font d’aigua freda."),
    "hungarian": ("A kis falu szélén állt egy öreg malom, amelynek kerekét a patak hajtotta. Őszi "
                  "estéken a molnár fiai tüzet raktak az udvaron, és történeteket meséltek a régi "
                  "időkről. Az asszonyok kenyeret sütöttek, a gyerekek pedig almát szedtek a kertben."),
    "german": ("Über den Feldern lag früh am Morgen dichter Nebel. Die Bäuerin öffnete die Tür des "
               "Stalls und hörte die Kühe ungeduldig muhen. Später fuhr sie mit dem Fahrrad zum "
               "Markt, um Käse, Äpfel und frische Brötchen zu verkaufen. „Schönes Wetter heute“, "
               "sagte der Händler."),
    "spanish": ("¿Dónde está la estación?, preguntó el viajero. El niño señaló la colina y respondió: "
                "«Detrás de aquella iglesia, a unos diez minutos a pie». El viajero le dio las "
                "gracias y siguió su camino bajo el sol de la mañana."),
    "irish": ("Tá muintir na hÉireann bródúil as a dteanga. Labhraíonn go leor daoine Gaeilge sa "
              "Ghaeltacht, agus múintear í i ngach scoil ar fud na tíre. Bhí an aimsir go hálainn "
              "inné."),
    "greek": ("Το μικρό χωριό βρισκόταν στην πλαγιά ενός βουνού, πάνω από τη θάλασσα. Κάθε πρωί οι "
              "ψαράδες κατέβαιναν στο λιμάνι και έλεγχαν τα δίχτυα τους. Τα παιδιά έτρεχαν στα "
              "στενά δρομάκια και η γιαγιά έψηνε ψωμί στον ξυλόφουρνο."),
    "russian": ("Старый мельник жил на краю деревни, у самой реки. Каждое утро он открывал ворота "
                "мельницы и слушал, как шумит вода. Зимой, когда река замерзала, он чинил колёса и "
                "читал внукам сказки при свете лампы."),
    "ukrainian": ("Навесні в нашому селі цвітуть вишні, і все довкола стає білим. Діти збирають квіти, "
                  "а бабуся пече пиріжки з ягодами. Увечері ми сидимо на ґанку і слухаємо, як співають "
                  "солов’ї."),
    "arabic": ("كان في القرية القديمة سوق كبير يجتمع فيه الناس كل يوم جمعة. يبيع الفلاحون الخضار "
               "والفواكه، ويشتري الأطفال الحلوى من الدكان الصغير قرب المسجد. وفي المساء يجلس الكبار "
               "في المقهى ويتحدثون عن أخبار المدينة."),
    "persian": ("در روستای کوچک ما، هر روز صبح نان تازه پخته می‌شود. بچه‌ها پیش از رفتن به مدرسه به "
                "نانوایی می‌روند و بوی نان گرم همهٔ کوچه را پر می‌کند."),
    "hebrew": ("בכפר הקטן שליד ההרים גר נגר זקן. בכל בוקר הוא פתח את חלון הסדנה והקשיב לציפורים. "
               "הילדים אהבו לשבת לידו ולראות איך הוא מגלף צעצועים מעץ."),
    "chinese": "清晨，小镇上的集市已经热闹起来。农民们挑着新鲜的蔬菜和水果来到街上，孩子们跟在大人后面，好奇地看着各种各样的小摊。一位老人坐在茶馆门口，慢慢地喝着热茶，和邻居聊着今年的收成。",
    "japanese": "朝早く、小さな町の市場はもう賑やかになっていました。農家の人たちは新鮮な野菜や果物を並べ、子供たちは親の後ろについて歩きながら、珍しい品物を興味深そうに眺めていました。",
    "korean": ("이른 아침, 작은 마을의 시장은 벌써 활기를 띠고 있었다. 농부들은 신선한 채소와 과일을 늘어놓았고, 아이들은 부모님을 따라다니며 신기한 물건들을 "
               "구경했다."),
    "hindi": ("सुबह-सुबह गाँव का बाज़ार लोगों से भर जाता है। किसान ताज़ी सब्ज़ियाँ और फल लेकर आते "
              "हैं, और बच्चे अपने माता-पिता के साथ घूमते हुए रंग-बिरंगी चीज़ें देखते हैं। शाम को "
              "बुज़ुर्ग पेड़ के नीचे बैठकर पुरानी कहानियाँ सुनाते हैं।"),
    "thai": ("ในตอนเช้าตลาดในหมู่บ้านเล็ก ๆ เต็มไปด้วยผู้คน ชาวนานำผักและผลไม้สดมาขาย เด็ก ๆ "
             "เดินตามพ่อแม่และมองดูสินค้าต่าง ๆ ด้วยความสนใจ"),
    "tamil": ("காலையில் கிராமத்துச் சந்தை மக்களால் நிறைந்திருக்கும். விவசாயிகள் புதிய "
              "காய்கறிகளையும் பழங்களையும் கொண்டு வருவார்கள்."),
    "georgian": ("პატარა სოფელში ცხოვრობდა მოხუცი მჭედელი. ყოველ დილით ის ადრე დგებოდა და სახელოსნოს "
                 "კარს აღებდა."),
    "armenian": ("Փոքրիկ գյուղում ապրում էր մի ծեր դարբին։ Ամեն առավոտ նա շուտ էր արթնանում և բացում "
                 "էր իր արհեստանոցի դուռը։"),
}
