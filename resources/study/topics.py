"""The study collection's material, written for examflow: 20 topics, each a query, five facts with
the question each one answers, and two sentences that talk about the topic without answering
anything (the passages that fool a similarity grader)."""

TOPICS = {
    "glaciers": (
        "how do glaciers move",
        [
            (
                "Ice deep inside a glacier deforms slowly under its own weight, flowing like a very stiff plastic.",
                "Why can solid ice flow downhill?",
            ),
            (
                "Meltwater at the base lubricates the bed, so the whole glacier can slide over the rock beneath it.",
                "What lets a glacier slip over its bed?",
            ),
            (
                "A typical valley glacier advances somewhere between a few centimetres and a metre per day.",
                "How fast does an ordinary valley glacier travel?",
            ),
            (
                "During a surge, flow can speed up a hundredfold for months before the glacier stalls again.",
                "What happens when a glacier surges?",
            ),
            (
                "Crevasses open where the brittle upper layer is stretched faster than it can flow.",
                "Why do cracks form near the surface of moving ice?",
            ),
        ],
        [
            "Glaciers are among the most impressive sights in mountain landscapes around the world.",
            "Many visitors travel far to walk on a glacier and photograph its blue ice.",
        ],
    ),
    "vaccines": (
        "how do vaccines train the immune system",
        [
            (
                "A vaccine shows the body a harmless piece or copy of a pathogen, such as a surface protein.",
                "What does a vaccine present to the body?",
            ),
            (
                "B cells answer by making antibodies that latch onto that specific protein.",
                "Which cells produce antibodies after vaccination?",
            ),
            (
                "Some of the responding cells survive for years as memory cells.",
                "What lets the body remember a pathogen for years?",
            ),
            (
                "On a later infection, memory cells multiply within days instead of weeks.",
                "Why is the response to a real infection faster after vaccination?",
            ),
            (
                "Booster doses raise antibody levels again when protection fades.",
                "What is the purpose of a booster dose?",
            ),
        ],
        [
            "Vaccines are discussed widely in the news and in conversations between parents.",
            "The topic of vaccines and immunity interests many people who care about health.",
        ],
    ),
    "espresso": (
        "how to pull a good espresso shot",
        [
            (
                "A standard double shot uses about eighteen grams of finely ground coffee.",
                "How much ground coffee goes into a double shot?",
            ),
            (
                "Water should be close to ninety-three degrees Celsius when it reaches the puck.",
                "What water temperature suits espresso?",
            ),
            (
                "The machine pushes the water through at roughly nine bars of pressure.",
                "What pressure does an espresso machine apply?",
            ),
            (
                "Extraction should take twenty-five to thirty seconds; a faster shot tastes sour.",
                "How long should extraction last, and what if it runs too fast?",
            ),
            ("If the shot runs slowly and tastes bitter, the grind is too fine.", "What causes a slow, bitter shot?"),
        ],
        [
            "Espresso culture has grown enormously, and cafes compete to pull the best shot.",
            "Many people love a good espresso shot in the morning before work.",
        ],
    ),
    "volcanoes": (
        "why do volcanoes erupt",
        [
            (
                "Magma forms where rock in the mantle melts, often because pressure drops or water lowers its melting point.",
                "Where does magma come from?",
            ),
            (
                "Being lighter than the surrounding rock, magma rises and collects in chambers below the surface.",
                "Why does magma rise toward the surface?",
            ),
            (
                "Dissolved gases such as water vapour and carbon dioxide come out of solution as magma ascends.",
                "Which gases drive an eruption?",
            ),
            (
                "Sticky, silica-rich magma traps gas bubbles, which is why such volcanoes explode violently.",
                "Why are some eruptions explosive?",
            ),
            (
                "Runny basaltic magma lets gas escape easily and produces gentle lava flows, as in Hawaii.",
                "Why do some volcanoes erupt gently?",
            ),
        ],
        [
            "Volcanoes erupt in spectacular fashion and have fascinated people throughout history.",
            "Watching a volcano erupt is an unforgettable experience for tourists and scientists alike.",
        ],
    ),
    "compost": (
        "how to make compost at home",
        [
            (
                "Mix roughly three parts brown material, like dry leaves, with one part green kitchen scraps.",
                "What ratio of browns to greens works in a compost heap?",
            ),
            (
                "Microbes need air, so the heap should be turned every week or two.",
                "How often should a heap be turned and why?",
            ),
            ("The pile should feel as damp as a wrung-out sponge.", "How moist should compost be?"),
            (
                "Meat and dairy attract rats and should stay out of a home bin.",
                "Which scraps should not go in a home compost bin?",
            ),
            (
                "A hot heap can turn into finished compost in about two to three months.",
                "How long does it take to get usable compost?",
            ),
        ],
        [
            "Making compost at home is a popular hobby for gardeners who like to recycle.",
            "Compost at home is something many households talk about trying one day.",
        ],
    ),
    "sleep": (
        "why do we need sleep",
        [
            (
                "During deep sleep the brain clears waste products through the glymphatic system.",
                "How does the brain clean itself during sleep?",
            ),
            ("Sleep consolidates memories by replaying the day's experiences.", "What role does sleep play in memory?"),
            ("Adults generally need seven to nine hours per night.", "How many hours do adults need?"),
            (
                "Short sleep weakens the immune response and raises infection risk.",
                "How does too little sleep affect immunity?",
            ),
            ("Growth hormone is released mostly in the first deep sleep cycles.", "When is growth hormone released?"),
        ],
        [
            "Everyone needs sleep, and sleep is a favourite topic in magazines.",
            "People often wonder why we need sleep and talk about their own sleep habits.",
        ],
    ),
    "bridges": (
        "how do suspension bridges carry their load",
        [
            (
                "The deck hangs from vertical suspenders attached to the main cables.",
                "What holds up the roadway of a suspension bridge?",
            ),
            ("The main cables are in tension and pass over tall towers.", "Which force acts in the main cables?"),
            ("The towers are pushed down in compression by the cables.", "What kind of force do the towers resist?"),
            (
                "Massive anchorages at each end hold the cable ends in the ground.",
                "Where are the ends of the main cables fixed?",
            ),
            (
                "A stiffening truss keeps the deck from twisting in strong wind.",
                "How is the deck kept from twisting in the wind?",
            ),
        ],
        [
            "Suspension bridges are elegant landmarks in many famous cities.",
            "Tourists love to photograph suspension bridges at sunset.",
        ],
    ),
    "bread": (
        "why does bread dough rise",
        [
            ("Yeast ferments sugars in the flour and releases carbon dioxide.", "What gas does yeast produce?"),
            (
                "Kneading develops gluten, a stretchy network that traps the gas.",
                "What traps the gas inside the dough?",
            ),
            (
                "Dough rises fastest at about twenty-five to thirty degrees Celsius.",
                "At what temperature does dough rise fastest?",
            ),
            ("Salt slows yeast, so it controls the pace of fermentation.", "How does salt affect rising?"),
            (
                "In the oven, trapped gas expands once more before the crumb sets, called oven spring.",
                "What is oven spring?",
            ),
        ],
        [
            "Bread dough is one of the oldest foods, and baking bread is a beloved tradition.",
            "Many home cooks enjoy watching bread dough and the smell of fresh bread.",
        ],
    ),
    "batteries": (
        "how does a lithium ion battery work",
        [
            (
                "When charging, lithium ions move from the cathode into the graphite anode.",
                "Where do lithium ions go while the battery charges?",
            ),
            (
                "During discharge the ions travel back while electrons flow through the outside circuit.",
                "How is current delivered during discharge?",
            ),
            (
                "A liquid electrolyte carries the ions but does not conduct electrons.",
                "What carries ions between the electrodes?",
            ),
            (
                "A thin porous separator keeps the electrodes from touching.",
                "What prevents a short circuit inside the cell?",
            ),
            (
                "Capacity fades as side reactions consume lithium over many cycles.",
                "Why does capacity shrink over time?",
            ),
        ],
        [
            "Lithium ion batteries are in phones, laptops and cars everywhere.",
            "The lithium ion battery industry is growing quickly around the world.",
        ],
    ),
    "migration": (
        "how do birds find their way when migrating",
        [
            (
                "Many birds sense the Earth's magnetic field to hold a heading.",
                "Which invisible cue helps birds keep direction?",
            ),
            (
                "Night migrants learn the rotation of the stars around the pole.",
                "How do birds flying at night use the sky?",
            ),
            (
                "Daytime migrants use the position of the sun, corrected by an internal clock.",
                "How do day-flying birds use the sun?",
            ),
            (
                "Young birds of some species fly the right direction alone on their first trip, guided by inherited programmes.",
                "Can young birds migrate without adults?",
            ),
            (
                "Close to their goal, birds recognise landmarks and even smells.",
                "What helps birds find the exact destination?",
            ),
        ],
        [
            "Bird migration is a wonder of nature watched by birders every spring and autumn.",
            "Migrating birds find their way across continents, which amazes people.",
        ],
    ),
    "tea": (
        "how to brew green tea properly",
        [
            (
                "Green tea prefers water at seventy to eighty degrees, not boiling.",
                "What water temperature suits green tea?",
            ),
            ("Steep the leaves for one to three minutes.", "How long should green tea steep?"),
            ("Use about two grams of leaf per cup.", "How much leaf goes into a cup?"),
            ("Boiling water or long steeping releases bitter catechins.", "What makes green tea bitter?"),
            ("Good leaves can be infused again two or three times.", "Can the same leaves be reused?"),
        ],
        [
            "Green tea is popular, and brewing green tea is part of many cultures.",
            "Many shops sell green tea in beautiful tins and cups.",
        ],
    ),
    "earthquakes": (
        "what causes earthquakes",
        [
            (
                "Tectonic plates grind past each other and stress builds up along faults.",
                "Where does stress build up before a quake?",
            ),
            (
                "When the stress exceeds the friction, the rock slips suddenly and releases energy as seismic waves.",
                "What releases the stored energy?",
            ),
            ("The point underground where slip starts is called the hypocentre.", "What is the hypocentre?"),
            (
                "Primary waves arrive first because they travel fastest through rock.",
                "Which seismic waves arrive first?",
            ),
            (
                "Each step of one on the magnitude scale means about thirty-two times more energy.",
                "How much more energy does one magnitude step mean?",
            ),
        ],
        [
            "Earthquakes are frightening events that are often in the news.",
            "Earthquakes affect millions of people, and many wonder what causes earthquakes.",
        ],
    ),
    "photosynthesis": (
        "how does photosynthesis work",
        [
            (
                "Chlorophyll in the chloroplasts absorbs red and blue light.",
                "Which colours of light does chlorophyll absorb?",
            ),
            (
                "Light energy splits water molecules, releasing oxygen.",
                "Where does the oxygen released by plants come from?",
            ),
            ("The energy is stored briefly in ATP and NADPH.", "Which molecules carry the captured energy?"),
            (
                "In the Calvin cycle the enzyme RuBisCO fixes carbon dioxide into sugar.",
                "Which enzyme fixes carbon dioxide?",
            ),
            ("Some plants in hot climates use C4 pathways to save water.", "How do some plants in hot climates adapt?"),
        ],
        [
            "Photosynthesis is taught in every school biology class.",
            "Photosynthesis makes plants green and is important for life.",
        ],
    ),
    "marathon": (
        "how to train for a first marathon",
        [
            (
                "Most plans take sixteen to twenty weeks of gradual build-up.",
                "How long does a typical training plan take?",
            ),
            (
                "One long run a week builds endurance, up to about thirty-two kilometres.",
                "How long should the longest training run be?",
            ),
            ("Increase weekly distance by no more than about ten percent.", "How fast should weekly mileage grow?"),
            ("Cut the training volume for two to three weeks before race day, the taper.", "What is the taper?"),
            (
                "Practise taking carbohydrate gels during long runs.",
                "What should runners practise eating during long runs?",
            ),
        ],
        [
            "Running a first marathon is a dream for many people who start jogging.",
            "Marathon races attract huge crowds and thousands of runners.",
        ],
    ),
    "coral": (
        "why are coral reefs bleaching",
        [
            (
                "Corals live with algae called zooxanthellae that give them food and colour.",
                "Which partners give corals their colour?",
            ),
            (
                "When water is too warm for weeks, corals expel the algae and turn white.",
                "What makes corals expel their algae?",
            ),
            (
                "A rise of one degree above the usual summer maximum can trigger bleaching.",
                "How much warming can trigger bleaching?",
            ),
            ("Bleached corals can recover if temperatures fall soon enough.", "Can bleached coral recover?"),
            (
                "Ocean acidification makes it harder for corals to build skeletons.",
                "How does acidification harm corals?",
            ),
        ],
        [
            "Coral reefs are colourful underwater worlds that divers love to visit.",
            "Coral reef bleaching is a sad topic discussed in many documentaries.",
        ],
    ),
    "rainbows": (
        "how are rainbows formed",
        [
            ("Sunlight is refracted as it enters a raindrop.", "What happens to sunlight entering a drop?"),
            (
                "Different colours bend by different amounts, which splits white light.",
                "Why does light split into colours?",
            ),
            (
                "Light reflects once off the back of the drop before leaving.",
                "How many reflections make a primary bow?",
            ),
            (
                "The primary bow appears at about forty-two degrees from the point opposite the sun.",
                "At what angle does the main bow appear?",
            ),
            (
                "A second reflection creates a fainter secondary bow with reversed colours.",
                "Why are the colours of the secondary bow reversed?",
            ),
        ],
        [
            "Rainbows are beautiful and appear in many songs and pictures.",
            "People love seeing rainbows after a storm and taking photos of them.",
        ],
    ),
    "insulin": (
        "what does insulin do in the body",
        [
            ("Insulin is made by beta cells in the pancreas.", "Which cells make insulin?"),
            ("It lets muscle and fat cells take up glucose from the blood.", "How does insulin lower blood sugar?"),
            (
                "The liver stores excess glucose as glycogen under insulin's signal.",
                "What does the liver do with extra glucose?",
            ),
            (
                "In type 1 diabetes the immune system destroys the insulin-making cells.",
                "What goes wrong in type 1 diabetes?",
            ),
            ("In type 2 diabetes cells respond poorly to insulin, called resistance.", "What is insulin resistance?"),
        ],
        [
            "Insulin is an important hormone that many people have heard of.",
            "Insulin in the body is a topic doctors discuss with patients.",
        ],
    ),
    "printing": (
        "how did the printing press change europe",
        [
            (
                "Gutenberg combined movable metal type with an oil-based ink around 1450.",
                "What did Gutenberg's press combine?",
            ),
            ("Books became far cheaper, and millions were printed by 1500.", "How many books existed by 1500?"),
            (
                "Printed pamphlets spread the ideas of the Reformation quickly.",
                "Which religious movement spread through pamphlets?",
            ),
            ("Standard printed texts let scientists compare results exactly.", "How did printing help science?"),
            ("Printing fixed spellings and strengthened national languages.", "What did printing do to languages?"),
        ],
        [
            "The printing press is a famous invention that changed Europe.",
            "Museums display old printing presses that visitors find fascinating.",
        ],
    ),
    "antibiotics": (
        "how do bacteria become resistant to antibiotics",
        [
            (
                "Random mutations can change the target an antibiotic binds to.",
                "How can a mutation defeat an antibiotic?",
            ),
            (
                "Bacteria swap resistance genes on small DNA rings called plasmids.",
                "How do bacteria share resistance genes?",
            ),
            ("Some bacteria pump the drug out of the cell with efflux pumps.", "What do efflux pumps do?"),
            ("Enzymes like beta-lactamase break the antibiotic apart.", "Which enzyme destroys penicillin-like drugs?"),
            (
                "Stopping a course early leaves the toughest bacteria alive to multiply.",
                "Why is stopping a course early risky?",
            ),
        ],
        [
            "Antibiotic resistance in bacteria is a worry for hospitals everywhere.",
            "Bacteria and antibiotics are in the headlines again and again.",
        ],
    ),
    "solar": (
        "how do solar panels make electricity",
        [
            ("Panels are made of silicon cells doped to form a p-n junction.", "What are solar cells made of?"),
            (
                "A photon knocks an electron loose, creating an electron-hole pair.",
                "What does light do inside the cell?",
            ),
            (
                "The junction's electric field pushes electrons one way, producing current.",
                "What drives the current in a cell?",
            ),
            (
                "An inverter converts the direct current to alternating current for the home.",
                "Why is an inverter needed?",
            ),
            (
                "Typical panels convert about twenty percent of sunlight into electricity.",
                "How efficient are typical panels?",
            ),
        ],
        [
            "Solar panels are appearing on more and more roofs in every town.",
            "Solar panels make electricity, and many neighbours are thinking about them.",
        ],
    ),
}
